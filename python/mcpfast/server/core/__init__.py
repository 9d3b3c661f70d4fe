"""The transport-neutral core: the `Endpoint` (one exchange in, one reply out through a
`seams.Responder`), the two eras and their method tables, emission and streams, the live
requests, the running of tasks, and the side paths (health, cards, access log)."""
