"""What creates no resources: string grammars, Kubernetes conventions, pinned versions, the
hardening ledger, the await model and the names of the GPU node contract."""
