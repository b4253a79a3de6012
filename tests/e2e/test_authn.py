"""Authentication as kube-apiserver does it, end to end (docs/access.md, "How a request names
its user"): client certificates from `flotilla ctl kubeconfig`, ServiceAccount tokens from `kubectl create
token`, SelfSubjectReview (`kubectl auth whoami`) and TokenReview, and the refusals: a
certificate of another CA, an expired one, one not for client authentication, a token that
is expired, forged, for another audience, malformed, or whose ServiceAccount is gone.

One server for the module. Clients are real: /usr/bin/kubectl, curl, and the official Python
client. Until RBAC grants them anything, a user other than the admin may do nothing but
discovery and SelfSubjectReview, so a 403 naming the user proves the server knew who it was.
Tokens are also minted here with the server's own DIR/pki/sa.key (PyJWT) to reach states
kube-apiserver's ten-minute minimum keeps TokenRequest from making (an expired token)."""
import base64
import datetime
import hashlib
import json
import os
import subprocess
import time

import jwt
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from kubernetes import client, config

from conftest import BIN, KUBECTL, wait_for

ISSUER = "https://kubernetes.default.svc"
WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
TOKENREVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SSR = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


def ctl_kubeconfig(server, *args, admin=None):
    return subprocess.run([BIN, "ctl", "kubeconfig", "--kubeconfig", admin or server.kubeconfig] + list(args),
                          capture_output=True, text=True, timeout=60)


def write(server, name, text):
    path = os.path.join(server.data_dir, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def kubectl(kubeconfig, *args):
    return subprocess.run([KUBECTL, "--kubeconfig", kubeconfig] + list(args), capture_output=True, text=True,
                          timeout=60)


def whoami(kubeconfig, *extra):
    r = kubectl(kubeconfig, "auth", "whoami", "-o", "json", *extra)
    return r, (json.loads(r.stdout)["status"]["userInfo"] if r.returncode == 0 else None)


def curl_token(server, token, method="POST", path=WHOAMI, body=SSR):
    return server.curl(method, path, body, headers=[f"Authorization: Bearer {token}"], auth=False)


def curl_cert(server, cert, key, path="/api/v1/namespaces/default/pods"):
    """HTTP status of a GET with a client certificate (and no token); 0 when TLS failed."""
    r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert",
                        os.path.join(server.data_dir, "pki", "ca.crt"), "--cert", cert, "--key", key,
                        f"{server.url}{path}"], capture_output=True, text=True, timeout=30)
    return int(r.stdout or 0)


def pem_files(server, name, cert, key):
    c = write(server, f"{name}.crt", cert.public_bytes(serialization.Encoding.PEM).decode())
    k = write(server, f"{name}.key", key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()).decode())
    return c, k


def load_ca(server):
    pki = os.path.join(server.data_dir, "pki")
    with open(os.path.join(pki, "ca.crt"), "rb") as f:
        ca = x509.load_pem_x509_certificate(f.read())
    with open(os.path.join(pki, "ca.key"), "rb") as f:
        key = serialization.load_pem_private_key(f.read(), None)
    return ca, key


def issue(ca_cert, ca_key, cn, orgs=(), days=1, not_before=None, usage=ExtendedKeyUsageOID.CLIENT_AUTH):
    """A certificate for CN/O signed by ca_key, and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    start = not_before or datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)] +
                     [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(ca_cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start)
            .not_valid_after(start + datetime.timedelta(days=days))
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return cert, key


def other_ca():
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "flotilla-ca")])  # the same name as ours
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return cert, key


def cert_kubeconfig(server, name, cert, key):
    """A kubeconfig for a client certificate, trusting the server's CA."""
    b64 = lambda b: base64.b64encode(b).decode()
    with open(os.path.join(server.data_dir, "pki", "ca.crt"), "rb") as f:
        ca = f.read()
    return write(server, f"{name}.kubeconfig", f"""apiVersion: v1
kind: Config
clusters:
- name: flotilla
  cluster: {{server: "{server.url}", certificate-authority-data: {b64(ca)}}}
users:
- name: {name}
  user:
    client-certificate-data: {b64(cert.public_bytes(serialization.Encoding.PEM))}
    client-key-data: {b64(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()))}
contexts:
- name: c
  context: {{cluster: flotilla, user: {name}}}
current-context: c
""")


def sa_signing_key(server):
    with open(os.path.join(server.data_dir, "pki", "sa.key"), "rb") as f:
        key = serialization.load_pem_private_key(f.read(), None)
    der = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    kid = base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()
    return key, kid


def mint(server, ns, name, uid, exp, aud=ISSUER):
    """A ServiceAccount token signed with the server's own key, as TokenRequest would make it."""
    key, kid = sa_signing_key(server)
    now = int(time.time())
    claims = {"aud": [aud], "exp": exp, "iat": now - 60, "nbf": now - 60, "iss": ISSUER, "jti": "test",
              "kubernetes.io": {"namespace": ns, "serviceaccount": {"name": name, "uid": uid}},
              "sub": f"system:serviceaccount:{ns}:{name}"}
    return jwt.encode(claims, key, algorithm="ES256", headers={"kid": kid})


def create_token(server, name, ns="default", *extra):
    r = server.kubectl("create", "token", name, "-n", ns, *extra)
    return r.stdout.strip()


# ---------------------------------------------------------------- client certificates

def test_kubeconfig_authenticates_as_the_user_and_groups(server):
    r = ctl_kubeconfig(server, "--user", "alice", "--group", "team-a", "--group", "devs", "--namespace", "team-a")
    assert r.returncode == 0, r.stderr
    assert "client-certificate-data:" in r.stdout and "client-key-data:" in r.stdout and "token:" not in r.stdout
    kc = write(server, "alice.kubeconfig", r.stdout)
    res, info = whoami(kc)
    assert res.returncode == 0, res.stderr
    assert info["username"] == "alice"
    assert info["groups"] == ["team-a", "devs", "system:authenticated"]
    # authenticated, not authorized (RBAC grants alice nothing yet): the 403 names her, and the
    # context's namespace is the one asked for
    res = kubectl(kc, "get", "pods")
    assert res.returncode != 0
    assert 'User "alice" cannot list resource "pods" in API group "" in the namespace "team-a"' in res.stderr
    # so does our own C client (flotilla ctl)
    res = subprocess.run([BIN, "ctl", "status", "--kubeconfig", kc], capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and 'User "alice" cannot list resource "resourcebindings"' in res.stderr, res.stderr
    # the official Python client reads the same kubeconfig (its Debian version predates
    # SelfSubjectReview: the 403 names the user)
    api = client.CoreV1Api(config.new_client_from_config(config_file=kc))
    with pytest.raises(client.ApiException) as e:
        api.list_namespaced_secret("team-a")
    assert e.value.status == 403
    assert 'User \\"alice\\" cannot list resource \\"secrets\\"' in e.value.body or \
        'User "alice" cannot list resource "secrets"' in json.loads(e.value.body)["message"]


def test_kubeconfig_is_only_for_administrators(server):
    r = ctl_kubeconfig(server, "--user", "eve", "--group", "team-a")
    kc = write(server, "eve.kubeconfig", r.stdout)
    # eve cannot mint a certificate for herself as system:masters
    r = ctl_kubeconfig(server, "--user", "eve2", "--group", "system:masters", admin=kc)
    assert r.returncode == 1 and r.stdout == ""
    assert "forbidden" in r.stderr, r.stderr
    # usage errors name the flag
    r = ctl_kubeconfig(server, "--group", "x")
    assert r.returncode == 2 and "--user NAME is required" in r.stderr
    r = ctl_kubeconfig(server, "--user", "bob", "--days", "0")
    assert r.returncode == 2 and "--days 0" in r.stderr


def test_certificate_of_another_ca_is_refused(server):
    ca, ca_key = other_ca()
    cert, key = issue(ca, ca_key, "mallory", ["system:masters"])
    kc = cert_kubeconfig(server, "mallory", cert, key)
    res, _ = whoami(kc)
    assert res.returncode != 0
    assert "Unauthorized" in res.stderr, res.stderr
    assert kubectl(kc, "get", "ns").returncode != 0
    c, k = pem_files(server, "mallory", cert, key)
    assert curl_cert(server, c, k) == 401
    # credentials that fail are refused even where none are needed, as kube-apiserver does
    assert curl_cert(server, c, k, "/version") == 401
    assert curl_cert(server, c, k, "/healthz") == 401
    # the same subject from our CA gets in (and is then refused as mallory, not as a stranger)
    ours, ours_key = load_ca(server)
    cert, key = issue(ours, ours_key, "mallory", ["team-x"])
    res, info = whoami(cert_kubeconfig(server, "mallory-ours", cert, key))
    assert res.returncode == 0 and info["username"] == "mallory" and info["groups"] == ["team-x",
                                                                                       "system:authenticated"]


def test_expired_or_server_only_certificate_is_refused(server):
    ca, ca_key = load_ca(server)
    # our CA's, but expired an hour ago
    past = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=2)
    cert, key = issue(ca, ca_key, "old-alice", ["team-a"], days=1, not_before=past)
    c, k = pem_files(server, "expired", cert, key)
    assert curl_cert(server, c, k) == 401
    res, _ = whoami(cert_kubeconfig(server, "expired", cert, key))
    assert res.returncode != 0 and "Unauthorized" in res.stderr
    # our CA's, valid, but for server authentication only
    cert, key = issue(ca, ca_key, "alice", ["system:masters"], usage=ExtendedKeyUsageOID.SERVER_AUTH)
    c, k = pem_files(server, "serveronly", cert, key)
    assert curl_cert(server, c, k) == 401
    # the server's own serving certificate is not a client certificate either
    pki = os.path.join(server.data_dir, "pki")
    assert curl_cert(server, os.path.join(pki, "server.crt"), os.path.join(pki, "server.key")) == 401
    # and the same CA's valid client certificate does get in (as itself)
    cert, key = issue(ca, ca_key, "carol", ["team-b"])
    c, k = pem_files(server, "carol", cert, key)
    assert curl_cert(server, c, k) == 403


# ---------------------------------------------------------------- ServiceAccount tokens

def test_service_account_token_works_until_its_account_is_deleted(server):
    server.kubectl("create", "namespace", "apps")
    server.kubectl("create", "serviceaccount", "robot", "-n", "apps")
    token = create_token(server, "robot", "apps", "--duration", "10m")
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    uid = server.kubectl_json("get", "serviceaccount", "robot", "-n", "apps")["metadata"]["uid"]
    assert header["alg"] == "ES256"
    assert claims["sub"] == "system:serviceaccount:apps:robot" and claims["iss"] == ISSUER
    assert claims["aud"] == [ISSUER]
    assert claims["exp"] - claims["iat"] == 600 and claims["nbf"] == claims["iat"]
    assert claims["kubernetes.io"] == {"namespace": "apps", "serviceaccount": {"name": "robot", "uid": uid}}
    res, info = whoami(server.kubeconfig, "--token", token)
    assert res.returncode == 0, res.stderr
    assert info == {"username": "system:serviceaccount:apps:robot", "uid": uid,
                    "groups": ["system:serviceaccounts", "system:serviceaccounts:apps", "system:authenticated"]}
    code, body = curl_token(server, token, "GET", "/api/v1/namespaces/apps/configmaps", None)
    assert code == 403 and 'User "system:serviceaccount:apps:robot" cannot list' in body["message"]
    # deleting the ServiceAccount revokes it; a new one of the same name has another uid
    server.kubectl("delete", "serviceaccount", "robot", "-n", "apps")
    code, body = curl_token(server, token)
    assert code == 401 and body["reason"] == "Unauthorized"
    server.kubectl("create", "serviceaccount", "robot", "-n", "apps")
    assert curl_token(server, token)[0] == 401
    assert curl_token(server, create_token(server, "robot", "apps"))[0] == 201


def test_token_request_bounds_and_missing_account(server):
    server.kubectl("create", "serviceaccount", "bounds", "-n", "default")
    path = "/api/v1/namespaces/default/serviceaccounts/bounds/token"
    req = lambda spec: {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    code, body = server.curl("POST", path, req({"expirationSeconds": 599}))
    assert code == 422, body
    assert body["details"]["causes"][0]["field"] == "spec.expirationSeconds"
    assert "may not specify a duration less than 10 minutes" in body["message"]
    code, body = server.curl("POST", path, req({"expirationSeconds": (1 << 32) + 1}))
    assert code == 422 and "2^32" in body["message"]
    code, body = server.curl("POST", path, req({"audiences": [""]}))
    assert code == 422 and body["details"]["causes"][0]["field"] == "spec.audiences[0]"
    code, body = server.curl("POST", path, req({"boundObjectRef": {"kind": "Deployment", "name": "x"}}))
    assert code == 422 and body["details"]["causes"][0]["field"] == "spec.boundObjectRef.kind"
    code, body = server.curl("POST", "/api/v1/namespaces/default/serviceaccounts/nobody/token", req({}))
    assert code == 404 and body["message"] == 'serviceaccounts "nobody" not found'
    code, body = server.curl("POST", path, req({}))  # defaults: an hour, the API's audience
    assert code == 201, body
    assert body["spec"] == {"audiences": [ISSUER], "expirationSeconds": 3600, "boundObjectRef": None}
    assert body["status"]["token"].count(".") == 2 and body["status"]["expirationTimestamp"].endswith("Z")
    r = server.kubectl("create", "token", "bounds", "--duration", "5m", check=False)
    assert r.returncode != 0 and "10 minutes" in r.stderr


def test_token_bound_to_a_secret_dies_with_it(server):
    server.kubectl("create", "serviceaccount", "bound", "-n", "default")
    server.kubectl("create", "secret", "generic", "anchor", "-n", "default", "--from-literal=a=b")
    token = create_token(server, "bound", "default", "--bound-object-kind", "Secret", "--bound-object-name", "anchor")
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    assert claims["kubernetes.io"]["secret"]["name"] == "anchor"
    assert curl_token(server, token)[0] == 201
    server.kubectl("delete", "secret", "anchor", "-n", "default")
    assert curl_token(server, token)[0] == 401


def test_expired_forged_and_foreign_tokens_are_refused(server):
    server.kubectl("create", "serviceaccount", "minted", "-n", "default")
    uid = server.kubectl_json("get", "serviceaccount", "minted", "-n", "default")["metadata"]["uid"]
    now = int(time.time())
    # signed by the server's key: valid now, within the minute of leeway, then past it
    assert curl_token(server, mint(server, "default", "minted", uid, now + 600))[0] == 201
    short = mint(server, "default", "minted", uid, now - 52)
    assert curl_token(server, short)[0] == 201
    wait_for(lambda: curl_token(server, short)[0] == 401, timeout=20, interval=0.5, what="the token to expire")
    assert curl_token(server, mint(server, "default", "minted", uid, now - 3600))[0] == 401
    # for another audience: not the API's, but TokenReview answers for the audience asked
    vault = mint(server, "default", "minted", uid, now + 600, aud="vault")
    assert curl_token(server, vault)[0] == 401
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
              "spec": {"token": vault, "audiences": ["vault"]}}
    code, body = server.curl("POST", TOKENREVIEWS, review)
    assert code == 201 and body["status"]["authenticated"] is True
    assert body["status"]["user"]["username"] == "system:serviceaccount:default:minted"
    assert body["status"]["audiences"] == ["vault"]
    # a real token with its exp pushed out: the signature no longer matches
    token = create_token(server, "minted", "default")
    h, p, s = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(p + "=="))
    claims["exp"] += 86400 * 365
    forged = h + "." + base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode() + "." + s
    code, body = curl_token(server, forged)
    assert code == 401 and body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                    "message": "Unauthorized", "reason": "Unauthorized", "code": 401}
    # signed by another key with the server's kid
    other = ec.generate_private_key(ec.SECP256R1())
    _, kid = sa_signing_key(server)
    fake = jwt.encode({**claims, "exp": now + 600}, other, algorithm="ES256", headers={"kid": kid})
    assert curl_token(server, fake)[0] == 401
    # alg none, malformed, huge
    none = jwt.encode({**claims, "exp": now + 600}, None, algorithm="none")
    for bad in (none, "eyJhbGciOiJFUzI1NiJ9.e30", "eyJ" + "A" * 8000 + ".e30.e30", h + "." + p + ".", "eyJ..."):
        assert curl_token(server, bad)[0] == 401, bad[:40]
    # TokenReview of a forged token: answered, not authenticated
    review["spec"] = {"token": forged}
    code, body = server.curl("POST", TOKENREVIEWS, review)
    assert code == 201 and body["status"]["authenticated"] is False and body["status"]["error"]
    # and the server is still serving
    assert server.kubectl("get", "ns").returncode == 0


def test_token_review_is_for_administrators(server):
    server.kubectl("create", "serviceaccount", "reviewer", "-n", "default")
    token = create_token(server, "reviewer", "default")
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
    code, body = server.curl("POST", TOKENREVIEWS, review)
    assert code == 201 and body["status"]["authenticated"] is True
    assert body["status"]["audiences"] == [ISSUER]
    code, body = server.curl("POST", TOKENREVIEWS, review, headers=[f"Authorization: Bearer {token}"], auth=False)
    assert code == 403
    assert ('User "system:serviceaccount:default:reviewer" cannot create resource "tokenreviews" in API group '
            '"authentication.k8s.io"') in body["message"]
    code, body = server.curl("POST", TOKENREVIEWS, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                                    "spec": {}})
    assert code == 422 and body["details"]["causes"][0]["field"] == "spec.token"


def test_tokens_and_certificates_outlive_a_restart(server_factory):
    s = server_factory()
    s.kubectl("create", "serviceaccount", "keeper", "-n", "default")
    token = create_token(s, "keeper", "default")
    r = ctl_kubeconfig(s, "--user", "dave", "--group", "ops")
    kc = write(s, "dave.kubeconfig", r.stdout)
    assert s.stop() == 0
    s.start()
    # the signing key (DIR/pki/sa.key) and the CA are the same after the restart
    code, body = curl_token(s, token)
    assert code == 201 and body["status"]["userInfo"]["username"] == "system:serviceaccount:default:keeper"
    res, info = whoami(kc)
    assert res.returncode == 0 and info["username"] == "dave" and info["groups"] == ["ops", "system:authenticated"]
    assert oct(os.stat(os.path.join(s.data_dir, "pki", "sa.key")).st_mode & 0o777) == "0o600"


def test_reviews_with_an_empty_or_repeating_body_are_refused_not_crashed(server):
    """The create-only endpoints of authentication (and client certificates) name no served
    kind: an empty body, or one repeating a key under fieldValidation=Strict, is a 400 naming
    the resource, and the server keeps serving."""
    for path in ("/apis/authentication.k8s.io/v1/tokenreviews",
                 "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                 "/apis/flotilla.io/v1alpha1/clientcertificates"):
        code, body = server.curl("POST", path, "")
        assert code == 400, (path, code, body)
        assert "the request body is empty" in body["message"], body
        code, body = server.curl("POST", path + "?fieldValidation=Strict", '{"spec": {}, "spec": {}}')
        assert code == 400, (path, code, body)
        assert "cannot be handled" in body["message"] and "duplicate field" in body["message"], body
    code, _ = server.curl("GET", "/api/v1/namespaces")
    assert code == 200
