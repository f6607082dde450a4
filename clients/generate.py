#!/usr/bin/env python3
"""Generate the Python and TypeScript clients' low-level layer from the
OpenAPI document of `alk serve` (crates/alkstore-http/openapi.json).

    python3 clients/generate.py          # (re)write the generated files
    python3 clients/generate.py --check  # exit 1 when they differ from what
                                         # the document gives (CI runs this)

Writes clients/python/alkstore_client/_generated.py and
clients/typescript/src/generated.ts: one method per operation, named after
its operationId (a missing, duplicated or unusable operationId stops the
generator); path values are positional arguments, percent-encoded as one
path segment; query parameters and the JSON body's properties are keyword
arguments (Python) or one `args` object (TypeScript). Operations answering
with `text/event-stream` are left to the hand-written clients. Standard
library only.
"""

import argparse
import difflib
import json
import keyword
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "crates/alkstore-http/openapi.json"
PY_OUT = ROOT / "clients/python/alkstore_client/_generated.py"
TS_OUT = ROOT / "clients/typescript/src/generated.ts"

METHODS = ("get", "put", "post", "delete", "patch")
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
TS_RESERVED = {
    "break", "case", "catch", "class", "const", "continue", "debugger", "default", "delete", "do",
    "else", "enum", "export", "extends", "false", "finally", "for", "function", "if", "import", "in",
    "instanceof", "new", "null", "return", "super", "switch", "this", "throw", "true", "try",
    "typeof", "var", "void", "while", "with", "yield", "let", "static", "implements", "interface",
    "package", "private", "protected", "public", "await", "args", "options", "body", "query",
}
# Names the hand-written clients define on top of the generated layer.
RESERVED_METHODS = {"request", "listen", "close"}


class SpecError(Exception):
    pass


def ref_name(ref):
    prefix = "#/components/schemas/"
    if not ref.startswith(prefix):
        raise SpecError(f"unsupported $ref {ref!r}")
    return ref[len(prefix):]


class Operation:
    def __init__(self, spec, path, method, op):
        self.path, self.method, self.op = path, method.upper(), op
        self.id = op.get("operationId")
        where = f"{self.method} {path}"
        if not self.id:
            raise SpecError(f"{where} has no operationId")
        if not IDENT.match(self.id) or keyword.iskeyword(self.id):
            raise SpecError(f"{where}: operationId {self.id!r} is not usable as a method name")
        self.summary = (op.get("summary") or "").strip()
        self.description = (op.get("description") or "").strip()
        params = op.get("parameters", [])
        for p in params:
            if "$ref" in p:
                raise SpecError(f"{where}: parameter $ref is not supported")
            if p["in"] not in ("path", "query"):
                raise SpecError(f"{where}: {p['in']} parameter {p['name']!r} is not supported")
        self.path_params = [p for p in params if p["in"] == "path"]
        self.query_params = [p for p in params if p["in"] == "query"]
        in_path = re.findall(r"\{([^}]+)\}", path)
        if in_path != [p["name"] for p in self.path_params]:
            if sorted(in_path) != sorted(p["name"] for p in self.path_params):
                raise SpecError(f"{where}: path parameters {in_path} are not the ones declared")
            by_name = {p["name"]: p for p in self.path_params}
            self.path_params = [by_name[n] for n in in_path]
        self.body_schema_name = None
        self.body_props = []  # (name, schema, required)
        body = op.get("requestBody")
        if body:
            content = body.get("content", {})
            if "application/json" not in content:
                raise SpecError(f"{where}: request body is not application/json")
            schema = content["application/json"]["schema"]
            if "$ref" in schema:
                self.body_schema_name = ref_name(schema["$ref"])
                schema = spec["components"]["schemas"][self.body_schema_name]
            if schema.get("type") != "object" or "properties" not in schema:
                raise SpecError(f"{where}: request body must be an object with properties")
            required = schema.get("required", [])
            props = schema["properties"]
            names = list(required) + [n for n in props if n not in required]
            self.body_props = [(n, props[n], n in required) for n in names]
        self.streaming = False
        self.response_schema = None
        self.response_text = ""
        for status in sorted(op.get("responses", {})):
            if not status.startswith("2"):
                continue
            resp = op["responses"][status]
            content = resp.get("content", {})
            self.response_text = f"{status}: {resp.get('description', '').strip()}"
            if "text/event-stream" in content:
                self.streaming = True
            elif "application/json" in content:
                self.response_schema = content["application/json"].get("schema")
            break
        locals_ = [p["name"] for p in self.path_params + self.query_params]
        names = locals_ + [n for n, _, _ in self.body_props]
        for n in names:
            if not IDENT.match(n) or keyword.iskeyword(n) or n == "self" or (n in locals_ and n in TS_RESERVED):
                raise SpecError(f"{where}: parameter or body property {n!r} is not usable as an argument name")
        if not self.streaming and (self.id in RESERVED_METHODS or self.id.startswith("_")):
            raise SpecError(f"{where}: operationId {self.id!r} clashes with a hand-written method")
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise SpecError(f"{where}: {sorted(dup)} named twice among path, query and body")

    @property
    def doc_lines(self):
        lines = []
        if self.summary:
            lines.append(self.summary)
        if self.description:
            lines += ["", *self.description.splitlines()]
        lines += ["", f"`{self.method} {self.path}`"]
        return lines


def load(spec_path):
    spec = json.loads(Path(spec_path).read_text())
    ops, seen = [], {}
    for path in sorted(spec.get("paths", {})):
        item = spec["paths"][path]
        for method in METHODS:
            if method not in item:
                continue
            op = Operation(spec, path, method, item[method])
            if op.id in seen:
                raise SpecError(
                    f"duplicate operationId {op.id!r}: {seen[op.id]} and {op.method} {path} "
                    "(every operation needs its own: methods are named after them)"
                )
            seen[op.id] = f"{op.method} {path}"
            ops.append(op)
    return spec, ops


def schema_label(schema):
    if not schema:
        return "JSON"
    if "$ref" in schema:
        return ref_name(schema["$ref"])
    return schema.get("type", "JSON") if isinstance(schema.get("type"), str) else "JSON"


# ---------------------------------------------------------------- Python


def py_str(text):
    return json.dumps(text, ensure_ascii=False)


def py_doc(lines, indent):
    text = "\n".join(lines).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    body = "\n".join((indent + line) if line else "" for line in text.splitlines())
    return f'{indent}"""{body.lstrip()}\n{indent}"""\n'


def oneline(text):
    return " ".join((text or "").split())


def python(spec, ops, source):
    info = spec.get("info", {})
    out = [
        f"# Generated by clients/generate.py from {source} ({info.get('title', '')} "
        f"{info.get('version', '')}). Do not edit: change the document and rerun the generator.\n",
        '"""The generated layer of the alkstore HTTP client: one method per operation\n'
        "of the OpenAPI document, named after its operationId. `Client` (in\n"
        "alkstore_client.client) supplies `_request` and the hand-written helpers.\n"
        '"""\n\n',
        "from urllib.parse import quote as _quote\n\n\n",
        "def _seg(value):\n"
        '    """A path value as one URL path segment: every reserved character\n'
        '    (and space, `%`, non-ASCII) percent-encoded."""\n'
        '    return _quote(str(value), safe="")\n\n\n',
        "def _pick(required, optional):\n"
        '    """Required fields as given; optional ones only when not None."""\n'
        "    out = dict(required)\n"
        "    out.update((k, v) for k, v in optional.items() if v is not None)\n"
        "    return out\n\n\n",
        "class GeneratedClient:\n",
        '    """Every JSON operation of the API; subclasses implement `_request`."""\n\n',
        "    def _request(self, method, path, query=None, body=None):  # pragma: no cover\n",
        "        raise NotImplementedError\n",
    ]
    streaming = []
    for op in ops:
        if op.streaming:
            streaming.append(op)
            continue
        pos = [p["name"] for p in op.path_params]
        req_kw, opt_kw, args_doc = [], [], []
        for p in op.path_params:
            args_doc.append(f"{p['name']}: {oneline(p.get('description')) or 'path value'}")
        for p in op.query_params:
            (req_kw if p.get("required") else opt_kw).append(p["name"])
            args_doc.append(f"{p['name']} (query): {oneline(p.get('description'))}".rstrip())
        for n, s, req in op.body_props:
            (req_kw if req else opt_kw).append(n)
            args_doc.append(f"{n}: {oneline(s.get('description'))}".rstrip())
        sig = ["self", *pos]
        if req_kw or opt_kw:
            sig += ["*", *req_kw, *(f"{n}=None" for n in opt_kw)]
        doc = op.doc_lines
        if args_doc:
            doc += ["", "Args:"]
            for a in args_doc:
                doc += textwrap.wrap(a, 80, initial_indent="    ", subsequent_indent="        ")
        doc += ["", "Returns:", f"    {schema_label(op.response_schema)} ({op.response_text})"]
        path = re.sub(r"\{([^}]+)\}", lambda m: "{_seg(" + m.group(1) + ")}", op.path)
        call = [py_str(op.method), ("f" if op.path_params else "") + py_str(path)]
        if op.query_params:
            req = ", ".join(f'"{p["name"]}": {p["name"]}' for p in op.query_params if p.get("required"))
            opt = ", ".join(f'"{p["name"]}": {p["name"]}' for p in op.query_params if not p.get("required"))
            call.append(f"query=_pick({{{req}}}, {{{opt}}})")
        if op.body_schema_name or op.body_props:
            req = ", ".join(f'"{n}": {n}' for n, _, r in op.body_props if r)
            opt = ", ".join(f'"{n}": {n}' for n, _, r in op.body_props if not r)
            call.append(f"body=_pick({{{req}}}, {{{opt}}})")
        out.append(f"\n    def {op.id}({', '.join(sig)}):\n")
        out.append(py_doc(doc, "        "))
        out.append(f"        return self._request({', '.join(call)})\n")
    out.append("\n\n# Operations answering with a text/event-stream, written by hand in client.py:\n")
    out.append(f"STREAMING = {tuple(op.id for op in streaming)!r}\n")
    out.append(f"OPERATIONS = {tuple(op.id for op in ops if not op.streaming)!r}\n")
    return "".join(out)


# ---------------------------------------------------------------- TypeScript


def ts_doc(lines, indent):
    lines = [line.replace("*/", "*\\/") for line in lines]
    while lines and not lines[-1]:
        lines.pop()
    if len(lines) == 1:
        return f"{indent}/** {lines[0]} */\n"
    body = "".join(f"{indent} *{(' ' + line) if line else ''}\n" for line in lines)
    return f"{indent}/**\n{body}{indent} */\n"


def ts_prop_name(name):
    return name if IDENT.match(name) else json.dumps(name)


def ts_type(schema, indent=""):
    if schema is None or schema is True or schema == {}:
        return "unknown"
    if "$ref" in schema:
        return ref_name(schema["$ref"])
    if "oneOf" in schema or "anyOf" in schema:
        parts = [ts_type(s, indent) for s in schema.get("oneOf") or schema.get("anyOf")]
        return " | ".join(f"({p})" if " & " in p else p for p in parts)
    if "allOf" in schema:
        parts = [ts_type(s, indent) for s in schema["allOf"]]
        return " & ".join(f"({p})" if " | " in p else p for p in parts)
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    t = schema.get("type")
    if isinstance(t, list):
        parts = [ts_type(dict(schema, type=x), indent) for x in t]
        return " | ".join(f"({p})" if " | " in p else p for p in parts)
    if t == "string":
        return "string"
    if t in ("integer", "number"):
        return "number"
    if t == "boolean":
        return "boolean"
    if t == "null":
        return "null"
    if t == "array":
        return f"Array<{ts_type(schema.get('items'), indent)}>"
    if t == "object" or "properties" in schema:
        return ts_object(schema, indent)
    return "unknown"


def ts_object(schema, indent):
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties")
    if not props:
        return f"Record<string, {ts_type(extra) if isinstance(extra, dict) else 'unknown'}>"
    required = set(schema.get("required", []))
    inner = indent + "  "
    out = ["{\n"]
    for name, s in props.items():
        desc = (s.get("description") or "").strip() if isinstance(s, dict) else ""
        if desc:
            out.append(ts_doc(desc.splitlines(), inner))
        opt = "" if name in required else "?"
        out.append(f"{inner}{ts_prop_name(name)}{opt}: {ts_type(s, inner)};\n")
    if isinstance(extra, dict):
        out.append(f"{inner}[key: string]: unknown;\n")
    out.append(indent + "}")
    return "".join(out)


def typescript(spec, ops, source):
    info = spec.get("info", {})
    out = [
        f"// Generated by clients/generate.py from {source} ({info.get('title', '')} "
        f"{info.get('version', '')}). Do not edit: change the document and rerun the generator.\n\n",
        "/** Options every call takes. */\n",
        "export interface CallOptions {\n",
        "  /** Aborts the request (a long poll too). */\n",
        "  signal?: AbortSignal;\n",
        "}\n\n",

        "/**\n",
        " * A path value as one URL path segment: every reserved character (and space, `%`, non-ASCII)\n",
        " * percent-encoded. A name that is exactly `.` or `..` cannot be sent: fetch resolves it (even\n",
        " * percent-encoded) as a relative path segment, so it throws a RangeError instead.\n",
        " */\n",
        "export function seg(value: string | number): string {\n",
        "  const s = String(value);\n",
        "  if (s === \".\" || s === \"..\") {\n",
        "    throw new RangeError(`${JSON.stringify(s)} cannot be a path value over fetch (it is resolved as a relative segment)`);\n",
        "  }\n",
        "  return encodeURIComponent(s).replace(\n",
        "    /[!'()*]/g,\n",
        '    (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase(),\n',
        "  );\n",
        "}\n",
    ]
    for name, schema in spec.get("components", {}).get("schemas", {}).items():
        out.append("\n")
        desc = (schema.get("description") or "").strip()
        if desc:
            out.append(ts_doc(desc.splitlines(), ""))
        plain_object = (
            schema.get("type") == "object"
            and schema.get("properties")
            and not any(k in schema for k in ("oneOf", "anyOf", "allOf", "enum"))
        )
        if plain_object:
            out.append(f"export interface {name} {ts_object(schema, '')}\n")
        else:
            out.append(f"export type {name} = {ts_type(schema, '')};\n")
    query_types = {}
    schemas = spec.get("components", {}).get("schemas", {})
    for op in ops:
        if op.streaming or not op.query_params:
            continue
        name = "".join(w.capitalize() for w in op.id.split("_")) + "Query"
        if name in schemas:
            raise SpecError(f"{op.method} {op.path}: its query type {name} clashes with a schema's name")
        query_types[op.id] = name
        props = {p["name"]: dict(p.get("schema", {}), description=p.get("description", "")) for p in op.query_params}
        required = [p["name"] for p in op.query_params if p.get("required")]
        out.append(f"\n/** The query parameters of `{op.id}`. */\n")
        out.append(f"export interface {name} {ts_object({'properties': props, 'required': required}, '')}\n")
    out += [
        "\n/** Every JSON operation of the API; `Client` supplies `request` and the hand-written helpers. */\n",
        "export abstract class GeneratedClient {\n",
        "  protected abstract request<T>(\n",
        "    method: string,\n",
        "    path: string,\n",
        "    query: object | undefined,\n",
        "    body: unknown,\n",
        "    options?: CallOptions,\n",
        "  ): Promise<T>;\n",
    ]
    streaming = []
    for op in ops:
        if op.streaming:
            streaming.append(op)
            continue
        params = [f"{p['name']}: {'number' if p['schema'].get('type') == 'integer' else 'string'}" for p in op.path_params]
        doc = op.doc_lines
        for p in op.path_params:
            doc.append(f"@param {p['name']} {oneline(p.get('description'))}".rstrip())
        qtype = query_types.get(op.id)
        btype = op.body_schema_name or (ts_object({"properties": dict((n, s) for n, s, _ in op.body_props), "required": [n for n, _, r in op.body_props if r]}, "  ") if op.body_props else None)
        args_required = any(r for _, _, r in op.body_props) or any(p.get("required") for p in op.query_params)
        if qtype and btype:
            atype = f"{btype} & {qtype}"
        else:
            atype = qtype or btype
        if atype:
            doc.append("@param args " + ("query parameters and body" if qtype and btype else "query parameters" if qtype else "the JSON body"))
            params.append(f"args: {atype}" + ("" if args_required else " = {}"))
        params.append("options?: CallOptions")
        rtype = ts_type(op.response_schema) if op.response_schema else "unknown"
        doc.append(f"@returns {schema_label(op.response_schema)} ({op.response_text})")
        path = re.sub(r"\{([^}]+)\}", lambda m: "${seg(" + m.group(1) + ")}", op.path)
        query, body, pre = "undefined", "undefined", ""
        if qtype and btype:
            names = ", ".join(p["name"] for p in op.query_params)
            pre = f"    const {{ {names}, ...body }} = args;\n"
            query, body = "{ " + names + " }", "body"
        elif qtype:
            query = "args"
        elif btype:
            body = "args"
        out.append("\n" + ts_doc(doc, "  "))
        out.append(f"  async {op.id}({', '.join(params)}): Promise<{rtype}> {{\n")
        out.append(pre)
        out.append(f"    return this.request(\"{op.method}\", `{path}`, {query}, {body}, options);\n")
        out.append("  }\n")
    out.append("}\n\n/** Operations answering with a text/event-stream, written by hand in client.ts. */\n")
    out.append(f"export const STREAMING = {json.dumps([op.id for op in streaming])} as const;\n")
    return "".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 when the generated files are not up to date")
    ap.add_argument("--spec", default=str(SPEC), help="the OpenAPI document (default: %(default)s)")
    a = ap.parse_args(argv)
    spec_path = Path(a.spec).resolve()
    try:
        source = spec_path.relative_to(ROOT)
    except ValueError:
        source = spec_path.name
    try:
        spec, ops = load(spec_path)
        files = {PY_OUT: python(spec, ops, source), TS_OUT: typescript(spec, ops, source)}
    except SpecError as e:
        print(f"generate.py: {spec_path}: {e}", file=sys.stderr)
        return 2
    stale = []
    for path, text in files.items():
        old = path.read_text() if path.exists() else ""
        if old == text:
            continue
        if a.check:
            stale.append(path)
            diff = difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                        str(path.relative_to(ROOT)), "(generated)", n=1)
            sys.stderr.writelines(list(diff)[:40])
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        names = ", ".join(str(p.relative_to(ROOT)) for p in stale)
        print(f"generate.py --check: {names} out of date with {source}; run python3 clients/generate.py",
              file=sys.stderr)
        return 1
    if a.check:
        print(f"generated clients up to date with {source} ({len(ops)} operations)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
