"""Decentralised (JWT) auth material for tests: operator, account and user
JWTs signed with NKeys, a server config in operator mode, and a .creds file."""

import base64
import hashlib
import json
import os
import time

import nkeys


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def new_key(prefix):
    seed = nkeys.encode_seed(os.urandom(32), prefix)
    kp = nkeys.from_seed(bytearray(seed))
    return seed, kp.public_key.decode(), kp


def sign_jwt(issuer_kp, issuer_pub, subject_pub, name, nats_claims) -> str:
    claims = {"iat": int(time.time()), "iss": issuer_pub, "name": name, "sub": subject_pub, "nats": nats_claims}
    claims["jti"] = base64.b32encode(hashlib.sha256(json.dumps(claims, sort_keys=True).encode()).digest()) \
        .decode().rstrip("=")
    header = _b64(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}).encode())
    body = _b64(json.dumps(claims).encode())
    sig = issuer_kp.sign(f"{header}.{body}".encode())
    return f"{header}.{body}.{_b64(sig)}"


def operator_setup(directory):
    """Return (server config text, path of a valid .creds, path of a creds of an unknown account)."""
    _, op_pub, op_kp = new_key(nkeys.PREFIX_BYTE_OPERATOR)
    op_jwt = sign_jwt(op_kp, op_pub, op_pub, "op", {"type": "operator", "version": 2})

    def account(name):
        _, acc_pub, acc_kp = new_key(nkeys.PREFIX_BYTE_ACCOUNT)
        limits = {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1, "wildcards": True,
                  "conn": -1, "leaf": -1}
        acc_jwt = sign_jwt(op_kp, op_pub, acc_pub, name, {"limits": limits, "type": "account", "version": 2})
        return acc_pub, acc_kp, acc_jwt

    def creds(acc_pub, acc_kp, path):
        user_seed, user_pub, _ = new_key(nkeys.PREFIX_BYTE_USER)
        user_jwt = sign_jwt(acc_kp, acc_pub, user_pub, "user",
                            {"pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1,
                             "type": "user", "version": 2})
        with open(path, "w") as f:
            f.write("-----BEGIN NATS USER JWT-----\n" + user_jwt + "\n------END NATS USER JWT------\n\n"
                    "************************* IMPORTANT *************************\n\n"
                    "-----BEGIN USER NKEY SEED-----\n" + user_seed.decode() + "\n------END USER NKEY SEED------\n")
        return path

    acc_pub, acc_kp, acc_jwt = account("app")
    other_pub, other_kp, _ = account("unknown")  # never preloaded in the server
    conf = (f"operator: {op_jwt}\nresolver: MEMORY\n"
            f"resolver_preload: {{\n  {acc_pub}: {acc_jwt}\n}}\n")
    good = creds(acc_pub, acc_kp, os.path.join(directory, "user.creds"))
    bad = creds(other_pub, other_kp, os.path.join(directory, "stranger.creds"))
    return conf, good, bad
