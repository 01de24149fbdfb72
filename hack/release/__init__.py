"""Shipping the operator: the lock files (:mod:`.lock`), the image
(``image.sh``, and :mod:`.rootfs` for its root filesystem without a registry)
and installing into a cluster (:mod:`.deploy`). Run from the repository root
as ``python -m hack.release.<name>`` (the Makefile's way)."""
