"""The strongest attacker: which poisoning attack harms a policy most, per budget?

What it answers: the most harmful point of the attack space (`space`: attacks declared
as knobs) for each policy and injection budget, found by a resumable search (`search`,
its log in `log`) and reported with its held-out harm and transfer (`study`).

Door: `wmtsim.studies.attack.study` (`attack_study`).
CLI: `wmtsim attack`.
Dashboard: The strongest attacker.
"""
