"""The scrambler wing of the accountants: sampling, dummies and scramblers (Ladjel et al.).

The accountant and its registry of bounds (:mod:`.accountant`, behind
``crowdhide.scrambler_epsilon``), the δ(ε) evaluators of the uncapped scrambler
(:mod:`.bounds`), their privacy curves (:mod:`.curves`) and the exhaustive oracles the bounds
are tested against (:mod:`.enumeration`). Import the module you need: this package re-exports
nothing.
"""
