"""What the benchmarks share: ``log`` and ``figures`` (their output),
``cluster`` (their use of the local cluster), ``jobs`` (the job they create),
``metrics`` (/metrics texts), ``follower`` and ``kubelet`` (watches and the
stand-in kubelet), ``cpu`` (CPU by process), ``operator`` (the operator as a
process of its own) and ``reporters`` (the process of many reporting ranks)."""
