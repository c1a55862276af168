"""Imported last by the pool's forkserver (``command.PRELOAD``): every object its imports made goes to the
garbage collector's permanent generation (``gc.freeze``), so that the workers forked from it never walk
them in a collection (and leave their memory pages shared), as Python's documentation of ``gc.freeze``
advises before forking. The forkserver imported with the collector off
(``command.preload_without_collections``); each worker turns it on (``execute.worker_init``)."""
from __future__ import annotations

import gc

gc.freeze()
