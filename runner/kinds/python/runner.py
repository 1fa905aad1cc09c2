# NoETL python task runner (embedded in the Go python tool, run with -c).
#
# Protocol: stdin carries one JSON object {"code": str, "args": {...},
# "libs": {alias: module} | [module, ...], "context": {...}}; the outcome is written as one JSON
# object to fd 3: {"ok": true, "result": ...} or {"ok": false, "type": str,
# "message": str, "traceback": str}. stdout/stderr belong to the user code
# (the task's logs). Only the standard library is used and heavy modules are
# imported lazily to keep the per-attempt start-up cost low.
import sys
import os
import json


def _runner():
    try:
        os.set_inheritable(3, False)
        chan = os.fdopen(3, "w", encoding="utf-8")
    except OSError:
        sys.stderr.write("noetl runner: result channel (fd 3) is not open\n")
        sys.exit(70)
    try:
        sys.stdout.reconfigure(line_buffering=True)
    except Exception:
        pass
    warm = sys.argv[1:2] == ["warm"]
    if warm:
        _warm(sys.argv[2:])
    payload = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    try:
        sys.stdin.close()
        sys.stdin = open(os.devnull, "r")
    except Exception:
        pass
    try:
        result = _run(payload)
        msg = {"ok": True, "result": _jsonable(result, set(), 0)}
    except BaseException as e:  # noqa: B902 - user code may raise anything
        msg = _failure(e)
    try:
        text = json.dumps(msg, ensure_ascii=False, allow_nan=False, default=str)
    except Exception as e:
        text = json.dumps(_failure(e), default=str)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    if warm:
        # The output ends with the answer: the engine returns it without
        # waiting for the interpreter's shutdown (what prints later, in
        # atexit handlers, goes nowhere).
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            os.close(null)
        except OSError:
            pass
    chan.write(text)
    chan.close()


def _warm(modules):
    # A warm interpreter, started ahead of its task: load the modules the
    # engine names (the runner's own and common ones; in a zygote's child
    # they are loaded already), say so on fd 4 (the engine hands the
    # interpreter out only then), then wait on stdin for the task.
    import importlib

    for name in modules:
        importlib.import_module(name)
    try:
        os.write(4, b"R")
        os.close(4)
    except OSError:
        sys.stderr.write("noetl runner: ready channel (fd 4) is not open\n")
        sys.exit(70)


_MISSING = object()
_TASK_FILE = "<task>"
_CODE = ""


def _run(payload):
    code = payload.get("code") or ""
    args = payload.get("args") or {}
    libs = payload.get("libs") or {}

    if "input_data" in args:
        input_data = args["input_data"]
    else:
        input_data = dict(args)
    names = {}
    for k, v in args.items():
        if _is_name(k):
            names[k] = v
    names["input_data"] = input_data

    import builtins

    g = {"__builtins__": builtins, "__name__": "__noetl_task__", "__doc__": None}
    # NoETL's `context` global: the execution context (an arg of the same
    # name, bound below, takes precedence).
    g["context"] = payload.get("context") or {}
    if isinstance(libs, dict):
        items = list(libs.items())
    elif isinstance(libs, (list, tuple)):
        items = [(str(m).split(".")[0], str(m)) for m in libs]
    elif isinstance(libs, str):
        items = [(m.strip().split(".")[0], m.strip()) for m in libs.split(",") if m.strip()]
    else:
        raise TypeError("libs must be a mapping alias -> module or a list of modules")
    if items:
        import importlib

        for alias, module in items:
            module = str(module)
            alias = str(alias)
            if not _is_name(alias):
                raise ValueError("libs: invalid alias %r" % alias)
            if ":" in module:
                # "pkg:name" is `from pkg import name` (NoETL's
                # {alias: {from: pkg, import: name}} libs entry).
                base, _, attr = module.partition(":")
                parent = importlib.import_module(base)
                try:
                    mod = getattr(parent, attr)
                except AttributeError:
                    mod = importlib.import_module(base + "." + attr)
            else:
                mod = importlib.import_module(module)
            if ":" not in module and "." in module and alias == module.split(".")[0]:
                # `import a.b` binds `a`
                mod = importlib.import_module(alias)
            g[alias] = mod

    global _CODE
    _CODE = code

    try:
        compiled = compile(code, _TASK_FILE, "exec", dont_inherit=True)
        wrapped = False
        uses_result = "result" in compiled.co_names
    except SyntaxError as e:
        if "outside function" not in str(e.msg):
            raise
        compiled, uses_result = _wrap(code, list(names))
        wrapped = True

    if not wrapped:
        g.update(names)
        exited = _call(lambda: exec(compiled, g))
        ns = g
        returned = _MISSING
    else:
        captured = {}
        g["__noetl_capture__"] = captured.update
        g["__noetl_noreturn__"] = _MISSING
        exec(compiled, g)
        fn = g.pop("__noetl_task__")
        box = []
        exited = _call(lambda: box.append(fn(**names)))
        returned = box[0] if box else _MISSING
        ns = captured

    if returned is not _MISSING and returned is not None:
        return returned
    result = ns.get("result", _MISSING)
    # An arg named `result` is not the task's result unless the top level of
    # the code uses the name.
    if result is not _MISSING and (uses_result or "result" not in names):
        return result
    main = ns.get("main")
    if not exited and callable(main):
        return _call_main(main, args, input_data)
    return None


def _call(fn):
    """Runs fn; returns True when it ended with sys.exit(0/None)."""
    try:
        fn()
    except SystemExit as e:
        if e.code is None or e.code == 0:
            return True
        raise
    return False


def _wrap(code, params):
    """Compiles code as the body of __noetl_task__(params...) so that a
    top-level `return` is legal; the function's locals are captured on exit
    (for `result` and `main`). Also reports whether the top level of the body
    (outside nested functions and classes) uses the name `result`."""
    import ast

    tree = ast.parse(code, _TASK_FILE, "exec")
    future = []
    body = list(tree.body)
    while body and isinstance(body[0], ast.ImportFrom) and body[0].module == "__future__":
        future.append(body.pop(0))
    if not body:
        body = [ast.Pass()]
    template = (
        "def __noetl_task__(%s):\n"
        "    try:\n"
        "        pass\n"
        "    finally:\n"
        "        __noetl_capture__(locals())\n"
        "    return __noetl_noreturn__\n"
    ) % ", ".join(params)
    wrapper = ast.parse(template, _TASK_FILE, "exec")
    fn = wrapper.body[0]
    fn.body[0].body = body
    wrapper.body = future + [fn]
    ast.fix_missing_locations(wrapper)
    uses_result = False
    todo = list(body)
    while todo and not uses_result:
        node = todo.pop()
        if isinstance(node, ast.Name) and node.id == "result":
            uses_result = True
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            todo.extend(node.decorator_list)
        elif not isinstance(node, ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))
    return compile(wrapper, _TASK_FILE, "exec", dont_inherit=True), uses_result


def _call_main(main, args, input_data):
    import inspect

    try:
        sig = inspect.signature(main)
    except (TypeError, ValueError):
        return main(**args)
    params = sig.parameters.values()
    if any(p.kind == p.VAR_KEYWORD for p in params):
        kw = dict(args)
        for p in params:
            if p.name == "input_data" and "input_data" not in kw and p.kind != p.VAR_KEYWORD:
                kw["input_data"] = input_data
        return main(**kw)
    pos, kw = [], {}
    for p in params:
        if p.name in args:
            value = args[p.name]
        elif p.name == "input_data":
            value = input_data
        elif p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.default is not p.empty:
            continue
        else:
            value = _MISSING
        if value is _MISSING:
            # let Python raise its own TypeError naming the missing argument
            continue
        if p.kind == p.POSITIONAL_ONLY:
            pos.append(value)
        else:
            kw[p.name] = value
    return main(*pos, **kw)


def _is_name(s):
    import keyword

    return isinstance(s, str) and s.isidentifier() and not keyword.iskeyword(s)


def _failure(e):
    import linecache
    import traceback

    # lets the traceback show the task's source lines
    linecache.cache[_TASK_FILE] = (len(_CODE), None, _CODE.splitlines(True), _TASK_FILE)

    tb = e.__traceback__
    t = tb
    while t is not None and t.tb_frame.f_code.co_filename != _TASK_FILE:
        t = t.tb_next
    tb = t
    text = "".join(traceback.format_exception(type(e), e, tb))
    try:
        sys.stdout.flush()
    except Exception:
        pass
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except Exception:
        pass
    name = type(e).__name__
    detail = str(e)
    return {
        "ok": False,
        "type": name,
        "message": "%s: %s" % (name, detail) if detail else name,
        "traceback": text,
    }


def _key(k):
    if isinstance(k, str):
        return k
    if k is None:
        return "null"
    if isinstance(k, bool):
        return "true" if k else "false"
    if isinstance(k, (int, float)):
        return json.dumps(k) if isinstance(k, int) or k == k else "NaN"
    return str(k)


def _jsonable(o, seen, depth):
    if o is None or isinstance(o, (str, bool)):
        return o
    if isinstance(o, int):
        return int(o)
    if isinstance(o, float):
        if o != o or o in (float("inf"), float("-inf")):
            return None
        return float(o)
    if depth > 500:
        return repr(o)
    if isinstance(o, (dict, list, tuple, set, frozenset)):
        oid = id(o)
        if oid in seen:
            return "<cycle>"
        seen.add(oid)
        try:
            if isinstance(o, dict):
                return {_key(k): _jsonable(v, seen, depth + 1) for k, v in o.items()}
            if isinstance(o, (set, frozenset)):
                try:
                    o = sorted(o)
                except TypeError:
                    o = list(o)
            return [_jsonable(v, seen, depth + 1) for v in o]
        finally:
            seen.discard(oid)
    t = type(o)
    mod = getattr(t, "__module__", "")
    if mod == "decimal" and t.__name__ == "Decimal":
        if not o.is_finite():
            return None
        if o == o.to_integral_value() and o.as_tuple().exponent >= 0:
            return int(o)
        return float(o)
    if mod == "uuid":
        return str(o)
    if isinstance(o, (bytes, bytearray, memoryview)):
        b = bytes(o)
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError:
            import base64

            return base64.b64encode(b).decode("ascii")
    if hasattr(o, "isoformat") and callable(o.isoformat):
        try:
            return o.isoformat()
        except Exception:
            pass
    if hasattr(o, "total_seconds") and callable(o.total_seconds):
        try:
            return o.total_seconds()
        except Exception:
            pass
    if hasattr(o, "__dataclass_fields__"):
        import dataclasses

        try:
            return _jsonable(dataclasses.asdict(o), seen, depth + 1)
        except Exception:
            pass
    for attr in ("tolist", "item", "to_dict", "_asdict", "model_dump", "dict"):
        f = getattr(o, attr, None)
        if callable(f):
            try:
                v = f()
            except Exception:
                continue
            if v is not o:
                return _jsonable(v, seen, depth + 1)
    try:
        from collections.abc import Mapping, Iterable

        if isinstance(o, Mapping):
            return _jsonable(dict(o), seen, depth + 1)
        if isinstance(o, Iterable) and not hasattr(o, "read"):
            return _jsonable(list(o), seen, depth + 1)
    except Exception:
        pass
    return str(o)


_runner()
