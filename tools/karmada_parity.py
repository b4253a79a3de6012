#!/usr/bin/env python3
"""karmada_parity.py - runs Karmada's published interpreter test cases against
`flotilla ctl interpret` and counts how many give Karmada's answer.

Karmada ships, for each of its bundled third-party customizations,
    pkg/resourceinterpreter/default/thirdparty/resourcecustomizations/
        <group>/<version>/<kind>/customizations.yaml
        <group>/<version>/<kind>/testdata/*-test.yaml
where each test document holds an input (desiredObj, observedObj, statusItems,
inputReplicas), an operation (InterpretHealth, AggregateStatus, ...) and the expected
named results (output.healthy, output.aggregatedStatus, ...). A string "{{EXCLUDE}}" in an
expected object marks a field not compared. This tool reads those files from a local git
copy of karmada-io/karmada (it needs no network and no server), loads Karmada's own script
as a ResourceInterpreterCustomization, runs the operation with the flotilla binary and
compares the results the way Karmada's own test does:
  - only the result names the case lists under output are compared, and each must exist;
  - objects are compared after dropping the {{EXCLUDE}} paths from both sides;
  - dependencies are compared as sets (sorted by apiVersion, kind, namespace, name);
  - replica requirements compare quantities by value ("1Gi" equals "1073741824");
  - numbers compare by value (4 equals 4.0), as Go's decoding into int64/float64 does.
A case with no output only has to run without error.

  - components (interpretComponent) are compared sorted by name (Karmada's scripts build
    them with pairs(), whose order Karmada's test does not rely on), quantities by value,
    none (null) equal to an empty list.
An operation the tool does not know is counted apart as "not supported", not as a failure.

Usage:
  tools/karmada_parity.py [--repo DIR] [--rev REV] [--bin PATH] [--kind SUBSTR] [-v]
  --repo  a git directory of karmada-io/karmada (bare or not); default
          /work/.mirror/karmada-io+karmada/repo
  --rev   the revision to read (default: the newest stable vX.Y.Z tag in the repository)
  --bin   the flotilla binary (default: build/flotilla beside this tool)
  --kind  only kinds whose <group>/<version>/<kind> path contains SUBSTR
  --ours  run each case against Flotilla's bundled customization for that kind
          (src/interp/bundled/*.yaml) instead of Karmada's script; a kind Flotilla does
          not bundle counts its cases as "not bundled"
  -v      print every case, not only the failing ones
Exit status: 0 when every supported case passes, 1 otherwise, 2 on a usage error.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from decimal import Decimal

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE = "pkg/resourceinterpreter/default/thirdparty/resourcecustomizations"
EXCLUDE = "{{EXCLUDE}}"
UNSUPPORTED = set()
# The result each operation's expected output names, and the CLI's operation flag.
OPERATIONS = {
    "retain": "retain",
    "interpretreplica": "interpretReplica",
    "revisereplica": "reviseReplica",
    "interpretstatus": "interpretStatus",
    "aggregatestatus": "aggregateStatus",
    "interprethealth": "interpretHealth",
    "interpretdependency": "interpretDependency",
    "interpretcomponent": "interpretComponent",
}


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True).stdout


def newest_stable_tag(repo):
    tags = git(repo, "tag", "--list", "v*").decode().split()
    stable = [t for t in tags if re.fullmatch(r"v\d+\.\d+\.\d+", t)]
    if not stable:
        sys.exit("karmada_parity: no vX.Y.Z tag in %s; give --rev" % repo)
    return max(stable, key=lambda t: tuple(int(x) for x in t[1:].split(".")))


# ---- comparing ----

SUFFIX = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
          "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
          "P": Decimal("1e15"), "E": Decimal("1e18"), "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20,
          "Gi": Decimal(2) ** 30, "Ti": Decimal(2) ** 40, "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60}


def quantity_value(v):
    """The value of a Kubernetes quantity (string or number), or None if it is not one."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return Decimal(str(v))
    if not isinstance(v, str):
        return None
    m = re.fullmatch(r"([+-]?[0-9.]+)(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)", v)
    if not m:
        return None
    try:
        if m.group(2):
            return Decimal(m.group(1) + m.group(2))
        return Decimal(m.group(1)) * SUFFIX[m.group(3) or ""]
    except ArithmeticError:
        return None


def normalize(v, quantities=False):
    """v with numbers made comparable (integral floats are ints) and, when quantities,
    the values of resourceRequest maps made Decimal values."""
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if quantities and k == "resourceRequest" and isinstance(x, dict):
                out[k] = {r: quantity_value(q) if quantity_value(q) is not None else q for r, q in x.items()}
            else:
                out[k] = normalize(x, quantities)
        return out
    if isinstance(v, list):
        return [normalize(x, quantities) for x in v]
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def excluded_paths(v, path=(), out=None):
    """The paths (tuples of keys and indexes) of the members v marks {{EXCLUDE}}."""
    out = set() if out is None else out
    if isinstance(v, dict):
        for k, x in v.items():
            if x == EXCLUDE:
                out.add(path + (k,))
            else:
                excluded_paths(x, path + (k,), out)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            excluded_paths(x, path + (i,), out)
    return out


def without(v, paths, path=()):
    """v without the members at paths (Karmada removes them from both sides)."""
    if isinstance(v, dict):
        return {k: without(x, paths, path + (k,)) for k, x in v.items() if path + (k,) not in paths}
    if isinstance(v, list):
        return [without(x, paths, path + (i,)) for i, x in enumerate(v)]
    return v


def drop_excluded(expected, actual):
    """Both objects without the paths expected marks {{EXCLUDE}}."""
    paths = excluded_paths(expected)
    return without(expected, paths), without(actual, paths)


def dep_key(d):
    return tuple(str((d or {}).get(k) or "") for k in ("apiVersion", "kind", "namespace", "name"))


def same(name, expected, actual):
    if name == "dependencies":
        e = sorted(normalize(expected or []), key=dep_key)
        a = sorted(normalize(actual or []), key=dep_key)
        return e == a
    if name == "components":
        def by_name(v):
            return sorted(normalize(v or [], True), key=lambda c: str((c or {}).get("name")))
        return by_name(expected) == by_name(actual)
    if name == "requires":
        return normalize(expected, True) == normalize(actual, True)
    if name in ("aggregatedStatus", "revised", "retained") and isinstance(expected, dict):
        e, a = drop_excluded(expected, actual)
        return normalize(e) == normalize(a)
    return normalize(expected) == normalize(actual)


# ---- running ----

def write_json(tmp, name, value):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        json.dump(value, f)
    return path


def run_case(binary, ric_path, case, tmp):
    """(verdict, detail): verdict is "pass", "fail" or "unsupported"."""
    op = str(case.get("operation") or "").lower()
    if op in UNSUPPORTED:
        return "unsupported", "operation %s" % case.get("operation")
    if op not in OPERATIONS:
        return "fail", "unknown operation %r" % case.get("operation")
    args = [binary, "ctl", "interpret", "-f", ric_path, "--operation", OPERATIONS[op], "-o", "json"]
    if case.get("desiredObj") is not None:
        args += ["--desired-file", write_json(tmp, "desired.json", case["desiredObj"])]
    if case.get("observedObj") is not None:
        args += ["--observed-file", write_json(tmp, "observed.json", case["observedObj"])]
    if case.get("statusItems") is not None:
        args += ["--status-file", write_json(tmp, "status.json", case["statusItems"])]
    if op == "revisereplica":
        args += ["--desired-replica", str(case.get("inputReplicas") or 0)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return "fail", "exit %d: %s" % (r.returncode, r.stderr.strip())
    got = json.loads(r.stdout)
    want = case.get("output") or {}
    for name, value in want.items():
        if name not in got:
            return "fail", "no %s in the results (got %s)" % (name, ", ".join(sorted(got)))
        if not same(name, value, got[name]):
            return "fail", diff(name, value, got[name])
    return "pass", ""


def diff(name, expected, actual):
    import difflib
    e = json.dumps(expected, indent=2, sort_keys=True).splitlines()
    a = json.dumps(actual, indent=2, sort_keys=True).splitlines()
    lines = list(difflib.unified_diff(e, a, "expected " + name, "flotilla " + name, lineterm="", n=2))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", default="/work/.mirror/karmada-io+karmada/repo")
    ap.add_argument("--rev")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "flotilla"))
    ap.add_argument("--kind", default="")
    ap.add_argument("--ours", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    o = ap.parse_args()
    bundled = {}
    if o.ours:
        for f in sorted(os.listdir(os.path.join(ROOT, "src", "interp", "bundled"))):
            if f.endswith(".yaml"):
                with open(os.path.join(ROOT, "src", "interp", "bundled", f)) as fh:
                    for d in yaml.safe_load_all(fh):
                        t = (d or {}).get("spec", {}).get("target", {})
                        bundled["%s/%s" % (t.get("apiVersion"), t.get("kind"))] = d
    if not os.access(o.bin, os.X_OK):
        ap.error("no flotilla binary at %s (build it, or give --bin)" % o.bin)
    rev = o.rev or newest_stable_tag(o.repo)
    commit = git(o.repo, "rev-parse", rev + "^{commit}").decode().strip()
    files = git(o.repo, "ls-tree", "-r", "--name-only", commit, BASE).decode().split("\n")
    kinds = sorted({os.path.dirname(f) for f in files if f.endswith("/customizations.yaml")})
    print("Karmada %s (commit %s), flotilla %s, %s" % (rev, commit, o.bin, "Flotilla's bundled customizations"
                                                         if o.ours else "Karmada's scripts"))
    totals = {"pass": 0, "fail": 0, "unsupported": 0, "missing": 0}
    with tempfile.TemporaryDirectory(prefix="karmada-parity-") as tmp:
        for kdir in kinds:
            short = kdir[len(BASE) + 1:]
            if o.kind not in short:
                continue
            docs = [d for d in yaml.safe_load_all(git(o.repo, "show", "%s:%s/customizations.yaml" % (commit, kdir)))
                    if d]
            if o.ours:
                docs = [bundled[short]] if short in bundled else []
            cases = []
            for f in sorted(x for x in files if x.startswith(kdir + "/testdata/") and x.endswith(".yaml")):
                for d in yaml.safe_load_all(git(o.repo, "show", "%s:%s" % (commit, f))):
                    if d:
                        cases.append((os.path.basename(f), d))
            counts = {"pass": 0, "fail": 0, "unsupported": 0, "missing": 0 if docs else len(cases)}
            # as Karmada's test: every case against every customization in the file
            for i, ric in enumerate(docs):
                ric_path = write_json(tmp, "ric%d.json" % i, ric)
                for fname, case in cases:
                    verdict, detail = run_case(o.bin, ric_path, case, tmp)
                    counts[verdict] += 1
                    if verdict == "fail" or o.verbose:
                        print("%s %s [%s] %s: %s" % (verdict.upper(), short, fname, case.get("name"),
                                                     case.get("operation")))
                        if detail:
                            print("    " + detail.replace("\n", "\n    "))
            for k in totals:
                totals[k] += counts[k]
            print("%-50s %3d/%-3d pass%s%s" % (short, counts["pass"], counts["pass"] + counts["fail"],
                                              ", %d not supported" % counts["unsupported"]
                                              if counts["unsupported"] else "",
                                              ", %d cases: not bundled" % counts["missing"]
                                              if counts["missing"] else ""))
    run = totals["pass"] + totals["fail"]
    every = run + totals["unsupported"] + totals["missing"]
    print("TOTAL: %d/%d cases give Karmada's answer (%d of an operation not supported%s)"
          % (totals["pass"], every, totals["unsupported"],
             "; %d of a kind not bundled" % totals["missing"] if o.ours else ""))
    print("       %d/%d of the supported operations' cases%s" % (totals["pass"], run,
                                                                 " of the bundled kinds" if o.ours else ""))
    return 0 if totals["fail"] == 0 and totals["missing"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
