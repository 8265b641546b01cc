"""Stage 3, the judgement: the causes of the time, the verdict they name, step regimes, the
verdict's stability and the report's consistency checks."""
