#!/usr/bin/env python3
"""Fails when libjitcache.so exports a symbol that include/jitcache/ does not declare.

Usage: check_exports.py LIBRARY INCLUDE_DIR

Reads the dynamic symbol table (nm -D --defined-only -C) and accepts a symbol only when it is a
function of a C header (jitcache.h, embed.h) or names a class or function declared in a public
header, in that header's namespace (jitcache, or a backend's jitcache::<backend>), outside
jitcache::detail. Anything else (an internal function, a detail:: type, a symbol of a library
linked in statically such as LMDB, xxHash or OpenSSL, a standard-library template instantiated
for an internal type) is listed and the check fails.
"""
import pathlib
import re
import subprocess
import sys

# What the C++ ABI emits for a class besides its members: the symbol names the class.
SPECIAL_PREFIXES = ("vtable for ", "typeinfo for ", "typeinfo name for ", "VTT for ",
                    "non-virtual thunk to ", "virtual thunk to ")


def public_names(include_dir):
    """namespace -> (classes, functions) declared in the headers of that namespace."""
    names = {}
    for header in sorted(pathlib.Path(include_dir).glob("*.hpp")):
        text = header.read_text()
        for match in re.finditer(r"^namespace ([\w:]+) \{(.*?)^\} // namespace \1$", text,
                                 re.M | re.S):
            namespace, body = match.group(1), match.group(2)
            # Comments mention names that are not declared; drop them.
            body = re.sub(r"//[^\n]*", "", body)
            # A nested namespace (detail) is internal: its declarations are not public.
            body = re.sub(r"namespace \w+ \{.*?\}", "", body, flags=re.S)
            classes, functions = names.setdefault(namespace, (set(), set()))
            classes.update(re.findall(
                r"\b(?:class|struct)\s+(?:\[\[\w+\]\]\s+)?(?:JITCACHE_EXPORT\s+)?(\w+)\s*[:{]",
                body))
            functions.update(re.findall(r"(~?\b\w+)\s*\(", body))
    return names


def c_functions(include_dir):
    """The functions the C headers (jitcache.h, embed.h) declare."""
    functions = set()
    for header in sorted(pathlib.Path(include_dir).glob("*.h")):
        text = re.sub(r"/\*.*?\*/", "", header.read_text(), flags=re.S)
        functions.update(re.findall(r"\b(jitcache_\w+)\s*\(", text))
    return functions


def strip_templates(name):
    """Removes every <...> (balanced) and [abi:...] tag from a demangled name."""
    name = re.sub(r"\[abi:\w+\]", "", name)
    out, depth = [], 0
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def qualified_name(symbol):
    """'jitcache::Cache::flush()' -> ['jitcache', 'Cache', 'flush']; None if it cannot tell."""
    for prefix in SPECIAL_PREFIXES:
        if symbol.startswith(prefix):
            return qualified_name(symbol[len(prefix):])
    if "operator" in symbol:
        # operator names hold characters the parser below splits on; name the class only.
        head = symbol.split("operator", 1)[0].rstrip(":")
        return qualified_name(head + "::@op()")
    name = strip_templates(symbol)
    name = name.split("(", 1)[0]
    name = name.split(" ")[-1]  # a template function's demangled name starts with its return type
    return name.split("::") if name else None


def is_public(symbol, names):
    parts = qualified_name(symbol)
    if not parts or parts[0] != "jitcache":
        return False
    for cut in range(len(parts) - 1, 0, -1):
        namespace = "::".join(parts[:cut])
        if namespace not in names:
            continue
        classes, functions = names[namespace]
        scope, member = parts[cut:-1], parts[-1]
        if any(c not in classes for c in scope):
            return False
        if not scope:  # a free function, or the class itself (vtable, typeinfo)
            return member in functions or member in classes
        return (member in functions or member == "@op" or member == scope[-1]
                or member == "~" + scope[-1])
    return False


def main():
    library, include_dir = sys.argv[1], sys.argv[2]
    names = public_names(include_dir)
    c_names = c_functions(include_dir)
    nm = subprocess.run(["nm", "-D", "--defined-only", "-C", library], check=True,
                        capture_output=True, text=True).stdout
    exported = sorted({line.split(" ", 2)[2] for line in nm.splitlines() if line.count(" ") >= 2})
    leaked = [s for s in exported if s not in c_names and not is_public(s, names)]
    print(f"{library}: {len(exported)} exported symbols, {len(leaked)} not in the public API")
    for symbol in leaked:
        print("  not public:", symbol)
    return 1 if leaked else 0


if __name__ == "__main__":
    sys.exit(main())
