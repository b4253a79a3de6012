"""A web app's chart, as `helm template` would render it, applied to the control plane in one
`kubectl apply -f` and propagated with one PropagationPolicy (propagateDeps carries the
Deployment's ServiceAccount, ConfigMap and Secret, and the Ingress's TLS Secret), plus the
ClusterPropagationPolicy its cluster-scoped PriorityClass needs (issue 41). Every object reaches
both members; the members' HPAs own their Deployment's replica count, which a template update
leaves alone (the hpa-scale-target-marker's retain-replicas label); and the members' status of
the HPA, PDB, Ingress and LoadBalancer Service comes back aggregated on the control plane.
Driven with /usr/bin/kubectl on `flotilla up`, members read through their own kubeconfigs.
"""
import json
import os
import tempfile

import pytest

from conftest import running_fleet, wait_for

NS = "shop"
MEMBERS = ("member1", "member2")
RETAIN = "resourcetemplate.karmada.io/retain-replicas"

CHART = """
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: shop-high}
value: 1000
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: shop, namespace: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: shop-config, namespace: shop}
data: {MODE: production}
---
apiVersion: v1
kind: Secret
metadata: {name: shop-db, namespace: shop}
stringData: {url: postgres://db/shop}
---
apiVersion: v1
kind: Secret
metadata: {name: shop-tls, namespace: shop}
type: kubernetes.io/tls
data: {tls.crt: Y2VydA==, tls.key: a2V5}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: shop-config-reader, namespace: shop}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: shop-config-reader, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: shop-config-reader}
subjects: [{kind: ServiceAccount, name: shop, namespace: shop}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: shop, namespace: shop, labels: {app: shop}}
spec:
  replicas: 1
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      serviceAccountName: shop
      priorityClassName: shop-high
      containers:
      - name: shop
        image: nginx:1.25
        envFrom: [{configMapRef: {name: shop-config}}]
        env: [{name: DB, valueFrom: {secretKeyRef: {name: shop-db, key: url}}}]
        resources: {requests: {cpu: 50m, memory: 32Mi}}
---
apiVersion: v1
kind: Service
metadata: {name: shop, namespace: shop}
spec:
  selector: {app: shop}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: shop-public, namespace: shop}
spec:
  type: LoadBalancer
  selector: {app: shop}
  ports: [{port: 443, targetPort: 8443}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop, namespace: shop}
spec:
  ingressClassName: nginx
  tls: [{hosts: [shop.example.com], secretName: shop-tls}]
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: shop, port: {number: 80}}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: shop, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: shop}
  minReplicas: 3
  maxReplicas: 6
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: shop, namespace: shop}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: shop}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: shop, namespace: shop}
spec:
  podSelector: {matchLabels: {app: shop}}
  policyTypes: [Ingress]
  ingress: [{ports: [{protocol: TCP, port: 8080}]}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: shop-cleanup, namespace: shop}
spec:
  schedule: "*/30 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          serviceAccountName: shop
          restartPolicy: OnFailure
          containers: [{name: cleanup, image: busybox:1.36, command: [sh, -c, "echo clean"]}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: shop, namespace: shop}
spec:
  propagateDeps: true
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment}
  - {apiVersion: v1, kind: Service}
  - {apiVersion: networking.k8s.io/v1, kind: Ingress}
  - {apiVersion: networking.k8s.io/v1, kind: NetworkPolicy}
  - {apiVersion: autoscaling/v2, kind: HorizontalPodAutoscaler}
  - {apiVersion: policy/v1, kind: PodDisruptionBudget}
  - {apiVersion: rbac.authorization.k8s.io/v1, kind: Role}
  - {apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding}
  - {apiVersion: batch/v1, kind: CronJob}
  placement:
    clusterAffinity: {clusterNames: [member1, member2]}
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: shop-cluster-scoped}
spec:
  resourceSelectors: [{apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, name: shop-high}]
  placement:
    clusterAffinity: {clusterNames: [member1, member2]}
"""

# (kubectl resource, name) of every namespaced object each member must hold; the first three
# and shop-tls are not selected by the policy: they follow as dependencies
ON_MEMBERS = [("serviceaccount", "shop"), ("configmap", "shop-config"), ("secret", "shop-db"),
              ("secret", "shop-tls"), ("role", "shop-config-reader"), ("rolebinding", "shop-config-reader"),
              ("deployment", "shop"), ("service", "shop"), ("service", "shop-public"), ("ingress", "shop"),
              ("hpa", "shop"), ("pdb", "shop"), ("networkpolicy", "shop"), ("cronjob", "shop-cleanup")]


@pytest.fixture(scope="module")
def chart():
    with running_fleet(members=2) as fleet:
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write(CHART)
        try:
            out = fleet.kubectl("apply", "-f", f.name).stdout
        finally:
            os.unlink(f.name)
        assert out.count(" created") == 18, out
        yield fleet


def ns_get(fleet, *args, member=None):
    return fleet.get(*args, "-n", NS, member=member)


def test_every_object_of_the_chart_reaches_both_members(chart):
    for member in MEMBERS:
        for res, name in ON_MEMBERS:
            wait_for(lambda: ns_get(chart, res, name, member=member) is not None, timeout=60,
                     what=f"{res}/{name} on {member}")
        wait_for(lambda: chart.get("priorityclass", "shop-high", member=member) is not None, timeout=60,
                 what=f"priorityclass on {member}")
    assert ns_get(chart, "secret", "shop-tls", member="member2")["type"] == "kubernetes.io/tls"
    assert ns_get(chart, "hpa", "shop", member="member1")["spec"]["minReplicas"] == 3


def test_the_hpa_target_is_marked_and_members_keep_the_hpa_replicas(chart):
    # the marker labels the Deployment template the propagated HPA scales
    wait_for(lambda: (ns_get(chart, "deployment", "shop")["metadata"].get("labels") or {}).get(RETAIN) == "true",
             timeout=30, what="retain-replicas label on the template")
    # each member's HPA raised its Deployment to minReplicas; the template still says 1
    for member in MEMBERS:
        wait_for(lambda: ns_get(chart, "deployment", "shop", member=member)["spec"]["replicas"] == 3, timeout=60,
                 what=f"the HPA's 3 replicas on {member}")
    # on member2 the load grows and its HPA scales to 5, as an HPA writes the scale subresource
    chart.kubectl("scale", "deployment", "shop", "-n", NS, "--replicas=5", member="member2")
    # a new chart version changes the pod template: it rolls out everywhere, replicas stay
    chart.kubectl("set", "env", "deployment/shop", "-n", NS, "RELEASE=2")
    for member in MEMBERS:
        wait_for(lambda: any(e.get("name") == "RELEASE" for e in ns_get(
            chart, "deployment", "shop", member=member)["spec"]["template"]["spec"]["containers"][0].get("env", [])),
            timeout=60, what=f"the template update on {member}")
    assert ns_get(chart, "deployment", "shop", member="member1")["spec"]["replicas"] == 3
    assert ns_get(chart, "deployment", "shop", member="member2")["spec"]["replicas"] == 5
    assert ns_get(chart, "deployment", "shop")["spec"]["replicas"] == 1


def test_status_of_hpa_pdb_ingress_and_load_balancer_flows_back(chart):
    def hpa_summed():
        st = ns_get(chart, "hpa", "shop").get("status") or {}
        return st.get("currentReplicas") == 8 and st.get("desiredReplicas") == 8

    # member1 runs 3 replicas, member2 5 (the previous test): the template shows the sums
    wait_for(hpa_summed, timeout=60, what="the HPA's summed status")
    hpa = ns_get(chart, "hpa", "shop")
    assert {c["type"]: c["status"] for c in hpa["status"]["conditions"]}["AbleToScale"] == "True"

    def pdb_summed():
        st = ns_get(chart, "pdb", "shop").get("status") or {}
        # maxUnavailable 1 per member: desiredHealthy 2 + 4, and once every replica is available
        # one disruption each
        return st.get("expectedPods") == 8 and st.get("desiredHealthy") == 6 and st.get("currentHealthy") == 8 \
            and st.get("disruptionsAllowed") == 2

    wait_for(pdb_summed, timeout=60, what="the PDB's summed status")

    def addresses(res, name):
        st = ns_get(chart, res, name).get("status") or {}
        return sorted(e.get("ip") for e in (st.get("loadBalancer") or {}).get("ingress") or [])

    wait_for(lambda: len(addresses("ingress", "shop")) == 2, timeout=60, what="both members' ingress addresses")
    wait_for(lambda: len(addresses("service", "shop-public")) == 2, timeout=60, what="both load balancer addresses")
    member_ips = sorted(ns_get(chart, "ingress", "shop", member=m)["status"]["loadBalancer"]["ingress"][0]["ip"]
                        for m in MEMBERS)
    assert addresses("ingress", "shop") == member_ips and member_ips[0] != member_ips[1]
    # what `kubectl get hpa,pdb,ingress` prints on the control plane
    out = chart.kubectl("get", "hpa,pdb,ingress", "-n", NS).stdout
    lines = {l.split()[0]: l.split() for l in out.splitlines() if l.strip() and not l.startswith("NAME")}
    assert lines["horizontalpodautoscaler.autoscaling/shop"][-2] == "8", out  # REPLICAS, then AGE
    assert lines["poddisruptionbudget.policy/shop"][3] == "2", out            # ALLOWED DISRUPTIONS
    joined = ",".join(member_ips)  # the printer clips ADDRESS at 16 characters
    assert lines["ingress.networking.k8s.io/shop"][3] == (joined if len(joined) <= 16 else joined[:13] + "..."), out
    # healthy everywhere: the binding's aggregated status says so per member
    rb = [b for b in chart.get("resourcebindings", "-n", NS)["items"] if b["spec"]["resource"]["kind"] ==
          "PodDisruptionBudget"][0]
    wait_for(lambda: all(i.get("health") == "Healthy" for i in (chart.get(
        "resourcebinding", rb["metadata"]["name"], "-n", NS).get("status") or {}).get("aggregatedStatus") or [{}]),
        timeout=60, what="the PDB healthy on both members")
