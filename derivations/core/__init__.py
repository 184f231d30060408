"""The core types every stage shares: `Layer` (`layer`), the one way to define a layer; `Formula`
(`formula`), the one record of a derived result; and the proof tactics with `DerivationError`
(`proof`).  `derivations` re-exports the types under its own name."""
