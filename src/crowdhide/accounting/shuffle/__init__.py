"""The shuffle wing of the accountants: what (ε, δ) do n shuffled ε0-LDP reports give?

One dispatcher decides which accountant answers a question (:mod:`.query`, behind
``crowdhide.shuffle_epsilon``); the bounds for any ε0-LDP randomizer (:mod:`.generic`), the
mechanism-specific certificates (:mod:`.mechanisms`), composed and subsampled rounds
(:mod:`.composition`), shuffled binary RR (:mod:`.binary_rr`) and the best certificate as one
curve (:mod:`.certificate`). Import the module you need: this package re-exports nothing, so
``import crowdhide.accounting.shuffle.generic`` stays light.
"""
