"""nbformat's notebook validator without compiling its schema again in every report process (``install``).

nbformat validates every notebook it reads or writes (a report: the five source notebooks as the plan
inspects them and as they are run, the five executed ones as Papermill writes them, and nbconvert's
check before the export) with a fastjsonschema validator that it compiles on first use in each process:
fastjsonschema turns the v4.5 schema into 180 kB of Python source and Python compiles it, about
0.045 s of CPU, in the runner of a one-job report and again in each pool worker.

``install`` builds that same validator from code compiled once and kept with the compiled templates
(``templatecache.cache_folder``: the code depends only on the schema, fastjsonschema and Python, so a
new ``$WORKBOOK_CACHE_DIR`` need not start cold): the source is fastjsonschema's own
``compile_to_code`` (its documented way to keep a validator as a module; the same generated function
that ``fastjsonschema.compile`` executes), its compiled code object kept with ``marshal`` as Python keeps
a module's bytecode, then loaded and executed (about 1 ms). The validator object is nbformat's own
``FastJsonSchemaValidator`` class, so its errors and ``iter_errors`` behave as before.

It relies on nbformat's module-level cache of validators (``nbformat.validator.validators``, keyed by
the validator's name, the format version and minor and whether additional properties are relaxed):
``tests/report/test_report_nbschema.py`` checks that ``nbformat.validator.get_validator`` hands out the
installed validator and that its verdicts equal a freshly compiled one's, so an nbformat release that
changes the key fails there (a report would only compile the schema itself again, as before).
``NBFORMAT_VALIDATOR=jsonschema`` (nbformat's own setting) is respected: nothing is installed then.
"""
from __future__ import annotations

import hashlib
import json
import marshal
import re
import sys
from pathlib import Path

from .. import paths
from .templatecache import cache_folder

_ROOT_FUNCTION = re.compile(r"^def (\w+)\(", re.M)   # fastjsonschema writes the root schema's function first


def _compiled_validator(schema: dict):
    """fastjsonschema's validating function for ``schema``, from code compiled once and kept in
    ``cache_folder()`` (keyed by the schema, fastjsonschema's version and Python's); a missing, corrupt
    or unwritable file only costs the compilation."""
    import fastjsonschema

    text = json.dumps(schema, sort_keys=True)
    key = hashlib.sha256(repr((sys.version, fastjsonschema.VERSION, text)).encode()).hexdigest()[:40]
    path = cache_folder() / f"nbformat-schema-{key}.marshal"
    try:
        name, code = marshal.loads(path.read_bytes())
        namespace: dict = {}
        exec(code, namespace)
        return namespace[name]
    except Exception:  # noqa: BLE001 - missing, corrupt, another Python's: compile below
        pass
    source = fastjsonschema.compile_to_code(schema)
    name = _ROOT_FUNCTION.search(source).group(1)
    code = compile(source, f"<nbformat schema {key[:12]}>", "exec")
    namespace = {}
    exec(code, namespace)
    try:
        paths.write_atomic(path, marshal.dumps((name, code)))
    except Exception:  # noqa: BLE001 - read-only or full: the compiled validator stands
        pass
    return namespace[name]


def schema_v4(minor: int) -> dict:
    """nbformat's JSON schema of format 4.``minor`` (the file ``nbformat.v4.nbformat_schema`` names for
    it, as ``nbformat.validator.get_validator`` reads it)."""
    import nbformat.v4 as v4

    path = Path(v4.__file__).parent / v4.nbformat_schema[(4, minor)]
    return json.loads(path.read_text(encoding="utf-8"))


def install() -> bool:
    """Put the strict v4 validator, built from the kept code, in nbformat's cache of validators, unless
    nbformat has one already or is told to use another library (``NBFORMAT_VALIDATOR``); whether it did."""
    import nbformat.v4 as v4
    from nbformat import json_compat
    from nbformat import validator as nbv

    fast = json_compat.FastJsonSchemaValidator
    if json_compat.get_current_validator() is not fast:
        return False
    key = (fast.name, 4, v4.nbformat_minor, False)
    if key in nbv.validators:
        return False
    schema = schema_v4(v4.nbformat_minor)

    class KeptValidator(fast):
        """nbformat's ``FastJsonSchemaValidator`` with its function from the kept code."""

        def __init__(self, schema):
            json_compat.JsonSchemaValidator.__init__(self, schema)
            self._validator = _compiled_validator(schema)

    nbv.validators[key] = KeptValidator(schema)
    return True
