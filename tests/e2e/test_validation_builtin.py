"""kube-apiserver's semantic validation of built-in kinds: a Deployment with negative replicas, a
selector that misses its template, a Pod without containers, a Service port out of range, a
ConfigMap key with a slash... are refused with 422 Invalid, one cause per problem naming the
field as upstream prints it, and nothing is stored. Minimal manifests kube-apiserver accepts
(no restartPolicy, no protocol, no strategy) are still accepted."""
import copy
import json

import pytest

from conftest import ensure_namespace

NS = "semval"
API = f"/api/v1/namespaces/{NS}"
APPS = f"/apis/apps/v1/namespaces/{NS}"
BATCH = f"/apis/batch/v1/namespaces/{NS}"


@pytest.fixture(scope="module", autouse=True)
def namespace(server):
    ensure_namespace(server, NS)


def pod_template(labels=None, **spec):
    spec.setdefault("containers", [{"name": "app", "image": "nginx"}])
    return {"metadata": {"labels": labels if labels is not None else {"app": "web"}}, "spec": spec}


def deployment(name, **spec):
    spec.setdefault("selector", {"matchLabels": {"app": "web"}})
    spec.setdefault("template", pod_template())
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
            "spec": spec}


def causes(body):
    """{field: [message, ...]} of a 422 Status."""
    assert isinstance(body, dict) and body.get("kind") == "Status", body
    assert body.get("code") == 422 and body.get("reason") == "Invalid", body
    out = {}
    for c in body["details"]["causes"]:
        out.setdefault(c["field"], []).append(c["message"])
    return out


def refused(server, collection, obj):
    """POST obj, expect 422, check it was not stored; returns {field: [messages]}."""
    code, body = server.curl("POST", collection, obj)
    assert code == 422, (code, body)
    code, _ = server.curl("GET", f"{collection}/{obj['metadata']['name']}")
    assert code == 404, f"{obj['metadata']['name']} was stored although refused"
    return causes(body)


def accepted(server, collection, obj):
    code, body = server.curl("POST", collection, obj)
    assert code == 201, (code, body)
    return body


def apply(server, obj, check=False):
    return server.kubectl("apply", "-f", "-", input=json.dumps(obj), check=check)


# ------------------------------------------------------------------------ Deployments


def test_deployment_replicas_selector_and_containers_through_kubectl(server):
    bad = deployment("web", replicas=-3, selector={"matchLabels": {"app": "other"}},
                     template=pod_template({"app": "x"}, containers=[]))
    r = apply(server, bad)
    assert r.returncode != 0
    err = r.stderr
    assert 'The Deployment "web" is invalid' in err, err
    assert "spec.replicas: Invalid value: -3: must be greater than or equal to 0" in err, err
    assert ('spec.template.metadata.labels: Invalid value: map[string]string{"app":"x"}: '
            '`selector` does not match template `labels`') in err, err
    assert "spec.template.spec.containers: Required value" in err, err
    r = server.kubectl("get", "deployment", "web", "-n", NS, check=False)
    assert r.returncode != 0 and "NotFound" in r.stderr, r.stderr
    # the same object made valid goes in
    good = deployment("web", replicas=3)
    assert apply(server, good).returncode == 0


def test_deployment_selector_strategy_and_template_rules(server):
    c = refused(server, f"{APPS}/deployments", deployment(
        "d1", selector={}, revisionHistoryLimit=-1,
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}},
        template=pod_template(restartPolicy="Never")))
    assert c["spec.selector"] == ["Invalid value: {}: empty selector is invalid for deployment"], c
    assert c["spec.revisionHistoryLimit"] == ["Invalid value: -1: must be greater than or equal to 0"], c
    assert c["spec.strategy.rollingUpdate.maxUnavailable"] == ["Invalid value: 0: may not be 0 when `maxSurge` is 0"]
    assert c["spec.template.spec.restartPolicy"] == ['Unsupported value: "Never": supported values: "Always"'], c

    c = refused(server, f"{APPS}/deployments", deployment("d2", strategy={"type": "BlueGreen"}))
    assert list(c) == ["spec.strategy"], c
    assert c["spec.strategy"][0].startswith("Unsupported value: ") and \
        c["spec.strategy"][0].endswith('supported values: "Recreate", "RollingUpdate"'), c

    c = refused(server, f"{APPS}/deployments", deployment(
        "d3", strategy={"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}))
    assert c == {"spec.strategy.rollingUpdate": ["Forbidden: may not be specified when strategy `type` is 'Recreate'"]}

    c = refused(server, f"{APPS}/deployments", deployment("d4", selector=None))
    assert c["spec.selector"] == ["Required value"], c
    assert "spec.template.metadata.labels" in c, c


def test_selector_is_immutable_on_update(server):
    obj = deployment("imm")
    accepted(server, f"{APPS}/deployments", obj)
    changed = copy.deepcopy(obj)
    changed["spec"]["selector"] = {"matchLabels": {"app": "web", "tier": "x"}}
    changed["spec"]["template"]["metadata"]["labels"]["tier"] = "x"
    code, body = server.curl("PUT", f"{APPS}/deployments/imm", changed)
    assert code == 422, body
    assert causes(body)["spec.selector"] == [
        'Invalid value: {"matchLabels":{"app":"web","tier":"x"}}: field is immutable'], body
    code, stored = server.curl("GET", f"{APPS}/deployments/imm")
    assert stored["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    # changing anything else (replicas, image) is fine
    obj2 = copy.deepcopy(stored)
    obj2["spec"]["replicas"] = 4
    code, body = server.curl("PUT", f"{APPS}/deployments/imm", obj2)
    assert code == 200, body


# ----------------------------------------------------------------------- Pod templates


def test_pod_containers_ports_and_names(server):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"}, "spec": {
        "restartPolicy": "Sometimes",
        "initContainers": [{"name": "app", "image": "busybox"}],
        "containers": [
            {"name": "app", "image": "nginx", "ports": [
                {"containerPort": 80, "name": "http"},
                {"containerPort": 70000, "hostPort": 70000, "protocol": "HTTP", "name": "http"},
                {"containerPort": 81, "name": "Bad_Name"}]},
            {"name": "app"},
            {"name": "Side_Car", "image": "x"}]}}
    c = refused(server, f"{API}/pods", pod)
    p = "spec.containers[0].ports"
    assert c[f"{p}[1].containerPort"] == ["Invalid value: 70000: must be between 1 and 65535, inclusive"], c
    assert c[f"{p}[1].hostPort"] == ["Invalid value: 70000: must be between 1 and 65535, inclusive"], c
    assert c[f"{p}[1].protocol"] == ['Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"'], c
    assert c[f"{p}[1].name"] == ['Duplicate value: "http"'], c
    assert 'Invalid value: "Bad_Name": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)' \
        in c[f"{p}[2].name"], c
    assert c["spec.containers[1].name"] == ['Duplicate value: "app"'], c
    assert c["spec.containers[1].image"] == ["Required value"], c
    assert c["spec.containers[2].name"][0].startswith('Invalid value: "Side_Car": a lowercase RFC 1123 label'), c
    assert c["spec.initContainers[0].name"] == ['Duplicate value: "app"'], c
    assert c["spec.restartPolicy"] == [
        'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'], c

    c = refused(server, f"{API}/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p2"},
                                        "spec": {}})
    assert c == {"spec.containers": ["Required value"]}, c


def test_pod_resources_and_volumes(server):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p3"}, "spec": {
        "volumes": [{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}, {"name": "nothing"}],
        "containers": [{
            "name": "app", "image": "nginx",
            "resources": {"requests": {"cpu": "2", "memory": "-1Mi", "example.com/gpu": "1.5"},
                          "limits": {"cpu": "500m", "memory": "lots"}},
            "volumeMounts": [{"name": "data", "mountPath": "/d"}, {"name": "missing", "mountPath": "/d"}]}]}}
    c = refused(server, f"{API}/pods", pod)
    r = "spec.containers[0].resources"
    assert c[f"{r}.requests[cpu]"] == ['Invalid value: "2": must be less than or equal to cpu limit of 500m'], c
    assert c[f"{r}.requests[memory]"] == ['Invalid value: "-1Mi": must be greater than or equal to 0'], c
    assert c[f"{r}.requests[example.com/gpu]"] == ['Invalid value: "1500m": must be an integer'], c
    assert c[f"{r}.limits[memory]"][0].startswith('Invalid value: "lots": quantities must match'), c
    assert c["spec.volumes[1].name"] == ['Duplicate value: "data"'], c
    assert c["spec.volumes[2]"] == ["Required value: must specify a volume type"], c
    m = "spec.containers[0].volumeMounts[1]"
    assert c[f"{m}.name"] == ['Not found: "missing"'], c
    assert c[f"{m}.mountPath"] == ['Invalid value: "/d": must be unique'], c


# ------------------------------------------------------- StatefulSets, DaemonSets, RS


def test_statefulset_daemonset_replicaset_rules(server):
    sts = deployment("s1", podManagementPolicy="Sometimes", serviceName="Bad.Name",
                     updateStrategy={"type": "Later"}, replicas=-1)
    sts["kind"] = "StatefulSet"
    c = refused(server, f"{APPS}/statefulsets", sts)
    assert c["spec.podManagementPolicy"] == [
        "Invalid value: \"Sometimes\": must be 'OrderedReady' or 'Parallel'"], c
    assert c["spec.updateStrategy"] == ["Invalid value: {\"type\":\"Later\"}: must be 'RollingUpdate' or 'OnDelete'"]
    assert c["spec.replicas"] == ["Invalid value: -1: must be greater than or equal to 0"], c
    assert "spec.serviceName" in c, c

    ds = deployment("ds1", selector={"matchLabels": {}},
                    updateStrategy={"rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}})
    ds["kind"] = "DaemonSet"
    c = refused(server, f"{APPS}/daemonsets", ds)
    assert c["spec.selector"] == ['Invalid value: {"matchLabels":{}}: empty selector is invalid for daemonset'], c
    assert c["spec.updateStrategy.rollingUpdate.maxUnavailable"] == [
        "Required value: cannot be 0 when maxSurge is 0"], c

    rs = deployment("rs1", template=pod_template({"app": "db"}, restartPolicy="OnFailure"))
    rs["kind"] = "ReplicaSet"
    del rs["spec"]["template"]["spec"]["containers"][0]["image"]
    c = refused(server, f"{APPS}/replicasets", rs)
    assert c["spec.template.metadata.labels"] == [
        'Invalid value: map[string]string{"app":"db"}: `selector` does not match template `labels`'], c
    assert c["spec.template.spec.restartPolicy"] == ['Unsupported value: "OnFailure": supported values: "Always"']
    assert c["spec.template.spec.containers[0].image"] == ["Required value"], c

    ds = deployment("ds2", selector=None)
    ds["kind"] = "DaemonSet"
    c = refused(server, f"{APPS}/daemonsets", ds)
    # upstream has no Required for a DaemonSet's selector: an absent one just matches nothing
    assert c == {"spec.template.metadata.labels": [
        'Invalid value: map[string]string{"app":"web"}: `selector` does not match template `labels`']}, c


def test_statefulset_claims_and_update_rules(server):
    sts = deployment("s2", serviceName="s2", updateStrategy={"rollingUpdate": {"maxUnavailable": 0}},
                     template=pod_template(containers=[{"name": "db", "image": "postgres",
                                                        "volumeMounts": [{"name": "data", "mountPath": "/var"}]}]),
                     volumeClaimTemplates=[{"metadata": {"name": "data"}, "spec": {
                         "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}])
    sts["kind"] = "StatefulSet"
    c = refused(server, f"{APPS}/statefulsets", sts)
    assert c == {"spec.updateStrategy.rollingUpdate.maxUnavailable": ["Invalid value: 0: cannot be 0"]}, c
    # a volumeMount may name a volumeClaimTemplate: the pods get a volume for it
    del sts["spec"]["updateStrategy"]
    accepted(server, f"{APPS}/statefulsets", sts)
    code, stored = server.curl("GET", f"{APPS}/statefulsets/s2")
    changed = copy.deepcopy(stored)
    changed["spec"]["serviceName"] = "other"
    code, body = server.curl("PUT", f"{APPS}/statefulsets/s2", changed)
    assert code == 422, body
    assert causes(body) == {"spec": [
        "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
        "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"]}, body
    # replicas, template and an explicit default podManagementPolicy may change
    stored["spec"]["replicas"] = 5
    stored["spec"]["podManagementPolicy"] = "OrderedReady"
    stored["spec"]["template"]["spec"]["containers"][0]["image"] = "postgres:17"
    code, body = server.curl("PUT", f"{APPS}/statefulsets/s2", stored)
    assert code == 200, body


# ------------------------------------------------------------------------ Jobs, CronJobs


def job_spec(**spec):
    spec.setdefault("template", {"spec": {"restartPolicy": "Never",
                                          "containers": [{"name": "run", "image": "busybox"}]}})
    return spec


def test_job_counts_and_restart_policy(server):
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j1"},
           "spec": job_spec(parallelism=-1, completions=-2, backoffLimit=-3,
                            template={"spec": {"containers": [{"name": "run", "image": "busybox"}]}})}
    c = refused(server, f"{BATCH}/jobs", job)
    for f, v in (("parallelism", -1), ("completions", -2), ("backoffLimit", -3)):
        assert c[f"spec.{f}"] == [f"Invalid value: {v}: must be greater than or equal to 0"], c
    # an absent restartPolicy is Always after defaulting, which a Job may not use
    assert c["spec.template.spec.restartPolicy"] == [
        'Unsupported value: "Always": supported values: "OnFailure", "Never"'], c
    accepted(server, f"{BATCH}/jobs", {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j2"},
                                       "spec": job_spec()})


@pytest.mark.parametrize("schedule,message", [
    ("61 * * * *", "end of range (61) above maximum (59): 61"),
    ("* * *", "expected exactly 5 fields, found 3: [* * *]"),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("0 0 * * funday", "failed to parse int from funday: strconv.Atoi: parsing \"funday\": invalid syntax"),
    ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
    ("@fortnightly", "unrecognized descriptor: @fortnightly"),
])
def test_cronjob_schedule(server, schedule, message):
    cj = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj-bad"},
          "spec": {"schedule": schedule, "concurrencyPolicy": "Sometimes",
                   "jobTemplate": {"spec": job_spec()}}}
    c = refused(server, f"{BATCH}/cronjobs", cj)
    assert c["spec.schedule"] == [f"Invalid value: {json.dumps(schedule)}: {message}"], c
    assert c["spec.concurrencyPolicy"] == [
        'Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"'], c


def test_cronjob_required_schedule_and_good_schedules(server):
    cj = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj0"},
          "spec": {"jobTemplate": {"spec": job_spec(template={"spec": {"containers": []}})}}}
    c = refused(server, f"{BATCH}/cronjobs", cj)
    assert c["spec.schedule"] == ["Required value"], c
    assert c["spec.jobTemplate.spec.template.spec.containers"] == ["Required value"], c
    for i, sched in enumerate(["@hourly", "*/15 0-6,22 1 jan-mar MON-FRI", "0 0 * * 0",
                               "@every 1h30m"]):
        cj = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": f"cj-ok{i}"},
              "spec": {"schedule": sched, "jobTemplate": {"spec": job_spec()}}}
        accepted(server, f"{BATCH}/cronjobs", cj)


# ------------------------------------------------------------------------------- Services


def service(name, **spec):
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": NS}, "spec": spec}


def test_service_name_is_a_dns1035_label(server):
    r = apply(server, service("1svc", ports=[{"port": 80}]))
    assert r.returncode != 0
    assert ('The Service "1svc" is invalid: metadata.name: Invalid value: "1svc": a DNS-1035 label must consist of '
            "lower case alphanumeric characters or '-', start with an alphabetic character, and end with an "
            "alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
            "'[a-z]([-a-z0-9]*[a-z0-9])?')") in r.stderr, r.stderr
    assert apply(server, service("svc1", ports=[{"port": 80}])).returncode == 0


def test_service_ports_and_types(server):
    c = refused(server, f"{API}/services", service("s-noports", selector={"app": "web"}))
    assert c == {"spec.ports": ["Required value"]}, c
    c = refused(server, f"{API}/services", service("s-ports", type="ClusterIP", ports=[
        {"port": 70000, "targetPort": "8080", "protocol": "ICMP", "nodePort": 30001},
        {"port": 80, "targetPort": 0, "name": "web"},
        {"port": 80, "name": "web"}]))
    assert c["spec.ports[0].port"] == ["Invalid value: 70000: must be between 1 and 65535, inclusive"], c
    assert c["spec.ports[0].name"] == ["Required value"], c
    assert c["spec.ports[0].targetPort"] == ['Invalid value: "8080": must contain at least one letter (a-z)'], c
    assert c["spec.ports[0].protocol"] == ['Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"'], c
    assert c["spec.ports[0].nodePort"] == ["Forbidden: may not be used when `type` is 'ClusterIP'"], c
    assert c["spec.ports[2].name"] == ['Duplicate value: "web"'], c
    assert c["spec.ports[2]"] == ['Duplicate value: {"protocol":"TCP","port":80}'], c
    c = refused(server, f"{API}/services", service("s-type", type="Bogus", ports=[{"port": 80}]))
    assert c["spec.type"] == [
        'Unsupported value: "Bogus": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"'], c
    c = refused(server, f"{API}/services", service("s-ext", type="ExternalName"))
    assert c == {"spec.externalName": ["Required value"]}, c
    c = refused(server, f"{API}/services", service("s-np", type="NodePort", ports=[{"port": 80, "nodePort": 80}]))
    assert c["spec.ports[0].nodePort"] == [
        "Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767"], c
    # headless and ExternalName Services need no ports
    accepted(server, f"{API}/services", service("s-headless", clusterIP="None", selector={"app": "db"}))
    accepted(server, f"{API}/services", service("s-extok", type="ExternalName", externalName="db.example.com."))


# ----------------------------------------------------------------------- ConfigMaps, Secrets


def test_configmap_and_secret_keys(server):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1"},
          "data": {"a/b": "x", "..hidden": "y", "both": "z"}, "binaryData": {"both": "eg=="}}
    c = refused(server, f"{API}/configmaps", cm)
    assert c["data[a/b]"] == ["Invalid value: \"a/b\": a valid config key must consist of alphanumeric characters, "
                              "'-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
                              "validation is '[-._a-zA-Z0-9]+')"], c
    assert c["data[..hidden]"] == ["Invalid value: \"..hidden\": must not start with '..'"], c
    assert c["data[both]"] == ['Invalid value: "both": duplicate of key present in binaryData'], c
    assert c["binaryData[both]"] == ['Invalid value: "both": duplicate of key present in data'], c

    tls = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tls1"}, "type": "kubernetes.io/tls",
           "data": {"tls.crt": "eA=="}}
    c = refused(server, f"{API}/secrets", tls)
    assert c == {"data[tls.key]": ["Required value"]}, c
    tls["stringData"] = {"tls.key": "k"}
    accepted(server, f"{API}/secrets", tls)
    dcj = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pull"},
           "type": "kubernetes.io/dockerconfigjson", "stringData": {"bad key": "{}"}}
    c = refused(server, f"{API}/secrets", dcj)
    assert c["data[.dockerconfigjson]"] == ["Required value"], c
    assert "data[bad key]" in c, c
