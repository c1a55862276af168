"""Imported last by the pool's forkserver (``command.PRELOAD``): every object its imports made goes to the
garbage collector's permanent generation (``gc.freeze``), so that the workers forked from it never walk
them in a collection (and leave their memory pages shared), as Python's documentation of ``gc.freeze``
advises before forking. The forkserver imported with the collector off
(``command.preload_without_collections``); each worker turns it on (``execute.worker_init``).
Before that, nbformat's validator is made here once (``nbschema.install``, from kept code: about 1 ms),
so that no worker compiles it (0.045 s each)."""
from __future__ import annotations

import gc

from .nbschema import install

install()
gc.freeze()
