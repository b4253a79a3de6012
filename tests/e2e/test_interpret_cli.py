"""`flotilla ctl interpret`: a ResourceInterpreterCustomization checked and run offline.

No server: the real binary is run on files, as a user runs it. What is pinned: --check prints
one line per rule (PASS, UNSET, or ERROR with the script line) and exits 1 on any ERROR; every
operation runs on a bundled customization (src/interp/bundled/kruise-cloneset.yaml, inputs
taken from its own test cases) and prints karmadactl's shape (`---`, `# [i/n] name:`, the value
as YAML) or one JSON object with -o json; inputs may be YAML, JSON, several documents or stdin;
and every kind of bad input (missing file, missing flag, malformed YAML, unknown operation, a
script that fails at run time, a file without a customization) gives exactly one line on stderr
that names the problem, and a non-zero exit (1 failure, 2 usage)."""
import json
import os
import subprocess

import pytest
import yaml

from conftest import BIN, ROOT

BUNDLED = os.path.join(ROOT, "src", "interp", "bundled")
CLONESET = os.path.join(BUNDLED, "kruise-cloneset.yaml")
CASES = os.path.join(BUNDLED, "testdata", "kruise-cloneset")

RULES = ["retention", "replicaResource", "componentResource", "replicaRevision", "statusReflection",
         "statusAggregation", "healthInterpretation", "dependencyInterpretation"]
FLINK = os.path.join(BUNDLED, "flink-flinkdeployment.yaml")

BROKEN = """\
apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata:
  name: broken
spec:
  target: {apiVersion: example.com/v1, kind: Widget}
  customizations:
    replicaResource:
      luaScript: |
        function GetReplicas(obj)
          return obj.spec.replicas, nil
        end
    healthInterpretation:
      luaScript: |
        function InterpretHealth(obj)
          if obj.status == nil then
            return false
        end
    statusReflection:
      luaScript: |
        function ReflectStatus(obj)
          local x = obj.status.phase
          return {phase = x}
        end
"""


def run(*args, stdin=None):
    return subprocess.run([BIN, "ctl", "interpret", *args], input=stdin, capture_output=True, text=True,
                          timeout=60)


def one_error_line(r, code, *needles):
    """r failed with exit code `code` and exactly one stderr line containing every needle."""
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip("\n").split("\n")
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("flotilla ctl interpret: "), lines[0]
    for n in needles:
        assert n in lines[0], (n, lines[0])
    assert "AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr
    return lines[0]


def case(name):
    with open(os.path.join(CASES, name)) as f:
        return yaml.safe_load(f)


@pytest.fixture
def files(tmp_path):
    """Write documents to files in tmp_path: files("a.yaml", obj, ...) -> path."""
    def write(name, *docs, raw=None):
        p = tmp_path / name
        if raw is not None:
            p.write_text(raw)
        elif name.endswith(".json"):
            assert len(docs) == 1
            p.write_text(json.dumps(docs[0]))
        else:
            p.write_text(yaml.safe_dump_all(docs))
        return str(p)
    return write


# ---- --check ----

def test_check_passes_every_bundled_customization():
    for name in sorted(os.listdir(BUNDLED)):
        if not name.endswith(".yaml"):
            continue
        r = run("-f", os.path.join(BUNDLED, name), "--check")
        assert r.returncode == 0, (name, r.stdout, r.stderr)
        lines = r.stdout.splitlines()
        assert [l.split(":")[0] for l in lines] == RULES, lines
        assert all(l.split(": ")[1] in ("PASS", "UNSET") for l in lines), lines
        assert r.stderr == ""


def test_check_reports_pass_unset_and_error_with_the_line(files):
    r = run("-f", files("broken.yaml", raw=BROKEN), "--check")
    assert r.returncode == 1, (r.stdout, r.stderr)
    got = dict(l.split(": ", 1) for l in r.stdout.splitlines())
    assert list(got) == RULES
    assert got["replicaResource"] == "PASS"
    assert got["statusReflection"] == "PASS"          # compiles; fails only when run
    for rule in ("retention", "componentResource", "replicaRevision", "statusAggregation", "dependencyInterpretation"):
        assert got[rule] == "UNSET"
    assert got["healthInterpretation"].startswith("ERROR line 5: 'end' expected"), got


def test_check_names_a_script_that_does_not_define_its_function(files):
    doc = yaml.safe_load(BROKEN)
    doc["spec"]["customizations"] = {"retention": {"luaScript": "function retain(d, o) return d end\n"}}
    r = run("-f", files("c.yaml", doc), "--check")
    assert r.returncode == 1
    assert "retention: ERROR" in r.stdout and "Retain" in r.stdout, r.stdout


def test_check_finds_the_customization_among_other_documents(files):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    with open(CLONESET) as f:
        ric = yaml.safe_load(f)
    r = run("-f", files("multi.yaml", cm, ric, cm), "--check")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("PASS") == 7


# ---- every operation on a bundled customization ----

def inputs_for(c, files):
    """The flags a test case's inputs become (objects as YAML, status items as JSON)."""
    args = []
    if "desired" in c:
        args += ["--desired-file", files("desired.yaml", c["desired"])]
    if "observed" in c:
        args += ["--observed-file", files("observed.yaml", c["observed"])]
    if "statusItems" in c:
        args += ["--status-file", files("status.json", c["statusItems"])]
    if "desiredReplica" in c:
        args += ["--desired-replica", str(c["desiredReplica"])]
    return args


@pytest.mark.parametrize("name", [
    "interpret-replica.yaml", "revise-replica.yaml", "retain-hpa-replicas.yaml", "interpret-status.yaml",
    "aggregate-status.yaml", "health-rollout-in-progress.yaml", "dependencies.yaml", "interpret-status-missing.yaml",
])
def test_each_operation_prints_the_expected_result(name, files):
    c = case(name)
    r = run("-f", CLONESET, "--operation", c["operation"], *inputs_for(c, files), "-o", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == c["expected"]
    # the same run as YAML: karmadactl's "---" / "# [i/n] name:" framing, same values
    r = run("-f", CLONESET, "--operation", c["operation"], *inputs_for(c, files))
    assert r.returncode == 0, r.stderr
    docs = r.stdout.split("---\n")[1:]
    assert len(docs) == len(c["expected"])
    for i, (key, want) in enumerate(c["expected"].items()):
        header, body = docs[i].split("\n", 1)
        assert header == f"# [{i + 1}/{len(docs)}] {key}:"
        assert yaml.safe_load(body) == want


def test_interpret_replica_prints_replica_then_requires(files):
    c = case("interpret-replica.yaml")
    r = run("-f", CLONESET, "--operation", "interpretReplica", "--desired-file", files("d.yaml", c["desired"]))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("---\n# [1/2] replica:\n3\n---\n# [2/2] requires:\n"), r.stdout


def test_operation_names_ignore_case_and_inputs_may_be_json_or_stdin(files):
    c = case("health-rollout-in-progress.yaml")
    r = run("-f", CLONESET, "--operation", "INTERPRETHEALTH", "--observed-file", files("o.json", c["observed"]))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "---\n# [1/1] healthy:\nfalse\n"
    r = run("-f", CLONESET, "--operation", "interpretHealth", "--observed-file", "-",
            stdin=json.dumps(c["observed"]))
    assert r.returncode == 0, r.stderr
    assert r.stdout.endswith("false\n")


def test_status_file_may_hold_one_item_per_document(files):
    c = case("aggregate-status.yaml")
    status = files("status.yaml", *c["statusItems"])
    r = run("-f", CLONESET, "--operation", "aggregateStatus", "--desired-file", files("d.yaml", c["desired"]),
            "--status-file", status, "-o", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == c["expected"]


# ---- what karmadactl accepts: no status file, empty and null items, zero replicas ----


def widget_aggregation(name, script):
    """A customization of example.com/v1 Widget with one rule, statusAggregation."""
    return ("apiVersion: config.karmada.io/v1alpha1\nkind: ResourceInterpreterCustomization\n"
            f"metadata:\n  name: {name}\nspec:\n  target: {{apiVersion: example.com/v1, kind: Widget}}\n"
            "  customizations:\n    statusAggregation:\n      luaScript: |\n"
            + "".join("        " + line + "\n" for line in script.strip("\n").split("\n")))


ITEMS_PROBE = widget_aggregation("items-probe", """\
function AggregateStatus(desiredObj, statusItems)
  local seen = {isNil = statusItems == nil, clusters = {}}
  if statusItems ~= nil then
    seen.firstIsNil = statusItems[1] == nil
    for i = 1, 3 do
      if statusItems[i] ~= nil then
        table.insert(seen.clusters, statusItems[i].clusterName)
      end
    end
    seen.count = #seen.clusters
  end
  desiredObj.status = seen
  return desiredObj
end
""")
WIDGET = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "n"}}


def aggregated(files, *status_args):
    r = run("-f", files("probe.yaml", raw=ITEMS_PROBE), "--operation", "aggregateStatus",
            "--desired-file", files("w.yaml", WIDGET), *status_args, "-o", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["aggregatedStatus"]["status"]


def test_aggregate_status_without_a_status_file_passes_nil_items(files):
    # karmadactl: no --status-file, statusItems nil (Karmada's scripts test statusItems == nil)
    assert aggregated(files) == {"isNil": True}


def test_aggregate_status_with_an_empty_status_file_passes_an_empty_list(files):
    # a status file with no items is an empty table, as karmadactl builds a list of its objects
    assert aggregated(files, "--status-file", files("s.json", [])) == {"isNil": False, "firstIsNil": True,
                                                                       "count": 0}


def test_aggregate_status_accepts_null_items_as_nil(files):
    items = [None, {"clusterName": "m2", "status": {"ready": 1}}, {"clusterName": "m3"}]
    got = aggregated(files, "--status-file", files("s.json", items))
    assert got == {"isNil": False, "firstIsNil": True, "clusters": ["m2", "m3"], "count": 2}
    # the same items as YAML
    got = aggregated(files, "--status-file", files("s.yaml", raw="- null\n- clusterName: m2\n- clusterName: m3\n"))
    assert got["clusters"] == ["m2", "m3"] and got["firstIsNil"] is True


CONDITIONS_BY_TYPE = widget_aggregation("conditions-by-type", """\
function AggregateStatus(desiredObj, statusItems)
  local latest = {}
  for i = 1, #statusItems do
    for _, c in ipairs(statusItems[i].status.conditions) do
      latest[c.type] = c
    end
  end
  local conditions = {}
  for _, c in pairs(latest) do
    table.insert(conditions, c)
  end
  desiredObj.status = {conditions = conditions}
  return desiredObj
end
""")


def test_pairs_lists_a_scripts_own_table_in_insertion_order(files):
    # as Karmada's engine (its MPIJob aggregation): conditions keyed by type come out in the
    # order the types were first seen, on every run, not in Lua's hash order
    types = ["Created", "Running", "Failed", "Suspended", "Restarting", "Succeeded", "Queued", "Admitted"]
    items = [{"clusterName": f"m{i}", "status": {"conditions": [{"type": t, "status": "True"} for t in types[i::3]]}}
             for i in range(3)]
    first_seen = [t for i in range(3) for t in types[i::3]]
    for _ in range(3):
        r = run("-f", files("c.yaml", raw=CONDITIONS_BY_TYPE), "--operation", "aggregateStatus",
                "--desired-file", files("w.yaml", WIDGET), "--status-file", files("s.json", items), "-o", "json")
        assert r.returncode == 0, r.stderr
        got = [c["type"] for c in json.loads(r.stdout)["aggregatedStatus"]["status"]["conditions"]]
        assert got == first_seen


def test_status_item_that_is_neither_object_nor_null_is_refused(files):
    one_error_line(run("-f", files("probe.yaml", raw=ITEMS_PROBE), "--operation", "aggregateStatus",
                       "--desired-file", files("w.yaml", WIDGET), "--status-file", files("s.json", [{}, 3])), 1,
                   "--status-file", "item 2", "not an object or null")


def test_revise_replica_to_zero(files):
    c = case("revise-replica.yaml")
    r = run("-f", CLONESET, "--operation", "reviseReplica", "--desired-file", files("d.yaml", c["desired"]),
            "--desired-replica", "0", "-o", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["revised"]["spec"]["replicas"] == 0


# ---- bad input: one line, non-zero exit ----

def test_missing_file():
    one_error_line(run("-f", "/nonexistent/ric.yaml", "--check"), 1, "/nonexistent/ric.yaml", "no such file")


def test_missing_customization_flag():
    one_error_line(run("--check"), 2, "-f FILE")


def test_neither_check_nor_operation():
    one_error_line(run("-f", CLONESET), 2, "--check", "--operation")


def test_unknown_operation_lists_the_known_ones():
    one_error_line(run("-f", CLONESET, "--operation", "interpretEverything"), 2, "interpretEverything",
                   "interpretReplica", "interpretComponent", "interpretDependency")


def test_interpret_component_prints_components_as_karmadactl(files):
    """The bundled FlinkDeployment rule's components, in the script's order, framed as
    karmadactl frames them; a CloneSet (one template) has no componentResource rule."""
    c = yaml.safe_load(open(os.path.join(BUNDLED, "testdata", "flink-flinkdeployment", "interpret-component.yaml")))
    d = files("flink.yaml", c["desired"])
    r = run("-f", FLINK, "--operation", "interpretComponent", "--desired-file", d)
    assert r.returncode == 0, r.stderr
    header, body = r.stdout.split("---\n")[1].split("\n", 1)
    assert header == "# [1/1] components:"
    assert yaml.safe_load(body) == c["expected"]["components"]
    assert [x["name"] for x in yaml.safe_load(body)] == ["jobmanager", "taskmanager"]
    one_error_line(run("-f", CLONESET, "--operation", "interpretComponent", "--desired-file", d), 1,
                   "no componentResource rule")


def test_unknown_flag():
    one_error_line(run("-f", CLONESET, "--check", "--kubeconfig", "x"), 2, "--kubeconfig")


def test_malformed_yaml_names_the_line(files):
    p = files("bad.yaml", raw="apiVersion: v1\nkind: [ConfigMap\nmetadata: {}\n")
    one_error_line(run("-f", p, "--check"), 1, "bad.yaml", "line ")
    one_error_line(run("-f", CLONESET, "--operation", "interpretHealth", "--observed-file", p), 1, "bad.yaml",
                   "line ")


def test_malformed_json_names_the_line(files):
    p = files("bad.json", raw='{"apiVersion": "v1",\n "kind": }\n')
    one_error_line(run("-f", CLONESET, "--operation", "interpretHealth", "--observed-file", p), 1, "bad.json",
                   "line 2")


@pytest.mark.parametrize("op,given,flag", [
    ("retain", ["desired"], "--observed-file"),
    ("retain", ["observed"], "--desired-file"),
    ("reviseReplica", ["desired"], "--desired-replica"),
    ("interpretHealth", [], "--observed-file"),
    ("interpretReplica", [], "--desired-file"),
    ("interpretComponent", [], "--desired-file"),
])
def test_missing_input_names_the_flag(op, given, flag, files):
    obj = case("health-healthy.yaml")["observed"]
    args = []
    for g in given:
        args += [f"--{g}-file", files(f"{g}.yaml", obj)]
    one_error_line(run("-f", CLONESET, "--operation", op, *args), 1, op, flag)


def test_both_objects_for_a_one_object_operation(files):
    obj = case("health-healthy.yaml")["observed"]
    one_error_line(run("-f", CLONESET, "--operation", "interpretHealth", "--desired-file", files("a.yaml", obj),
                       "--observed-file", files("b.yaml", obj)), 1, "not both")


def test_bad_desired_replica():
    one_error_line(run("-f", CLONESET, "--operation", "reviseReplica", "--desired-replica", "-1"), 2,
                   "--desired-replica")


def test_script_error_names_the_rule_and_the_line(files):
    ric = files("broken.yaml", raw=BROKEN)
    obj = files("o.yaml", {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})
    line = one_error_line(run("-f", ric, "--operation", "interpretStatus", "--observed-file", obj), 1,
                          '[string "statusReflection"]:2:', "ReflectStatus")
    assert "attempt to index a nil value" in line
    # a bad return value has no script line: the rule is named instead
    one_error_line(run("-f", ric, "--operation", "interpretReplica", "--desired-file", obj), 1,
                   "replicaResource", "GetReplicas")
    # a compile error surfaces when running, too
    one_error_line(run("-f", ric, "--operation", "interpretHealth", "--observed-file", obj), 1,
                   '[string "healthInterpretation"]:5:')


def test_operation_the_customization_lacks(files):
    ric = files("broken.yaml", raw=BROKEN)
    obj = files("o.yaml", {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})
    one_error_line(run("-f", ric, "--operation", "retain", "--desired-file", obj, "--observed-file", obj), 1,
                   "no retention rule")


def test_file_without_a_customization(files):
    p = files("cm.yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    one_error_line(run("-f", p, "--check"), 1, "cm.yaml", "no ResourceInterpreterCustomization")


def test_file_with_two_customizations(files):
    with open(CLONESET) as f:
        ric = yaml.safe_load(f)
    one_error_line(run("-f", files("two.yaml", ric, ric), "--check"), 1, "2 ResourceInterpreterCustomizations")


def test_object_file_with_two_documents(files):
    obj = case("health-healthy.yaml")["observed"]
    one_error_line(run("-f", CLONESET, "--operation", "interpretHealth", "--observed-file",
                       files("two.yaml", obj, obj)), 1, "--observed-file", "2 documents")


def test_help():
    r = subprocess.run([BIN, "ctl", "interpret", "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0
    assert "--operation" in r.stdout and "--check" in r.stdout and "interpretDependency" in r.stdout
