"""Layer 5, studies: meta-evaluation protocols and statistics (``meta/``), response generation
(``generation/``), the controlled perturbation builders (``perturb/``) and the judge's
workflow (``judge/``)."""
