"""engine.auth (creds text, seeds, nonce signatures) and tclnats_py.credentials
(the files a driver reads before each connection attempt)."""

import base64
import os

import nkeys
import pytest

from tclnats_py import NatsError
from tclnats_py.credentials import load_creds, read_credentials, read_seed
from tclnats_py.engine.auth import nkey_public, parse_creds, seed_from_text, sign_nonce
from tclnats_py.engine.options import Options

SEED = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
JWT = "eyJhbGciOiJlZDI1NTE5In0.eyJzdWIiOiJVQUJDIn0.c2lnbmF0dXJl"


def creds_text(jwt=JWT, seed=SEED):
    return ("-----BEGIN NATS USER JWT-----\n" + jwt + "\n------END NATS USER JWT------\n\n"
            "some words between the blocks\n\n"
            "-----BEGIN USER NKEY SEED-----\n" + seed.decode() + "\n------END USER NKEY SEED------\n")


def test_parse_creds_and_sign():
    jwt, seed = parse_creds(creds_text())
    assert jwt == JWT and seed == SEED
    sig = sign_nonce(seed, "n0nce")
    kp = nkeys.from_seed(bytearray(seed))
    assert kp.verify(b"n0nce", base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4)))
    assert nkey_public(seed) == kp.public_key.decode()


def test_bad_creds_text_is_err_authorization_without_the_seed():
    with pytest.raises(NatsError) as e:
        parse_creds("-----BEGIN NATS USER JWT-----\nabc\n", "u.creds")
    assert e.value.code == "ErrAuthorization" and "u.creds" in str(e.value)
    assert SEED.decode() not in str(e.value)


def test_seed_from_text():
    assert seed_from_text("# my key\n  " + SEED.decode() + "  \n") == SEED
    assert seed_from_text("nothing here\n") is None


def test_drivers_read_the_files(tmp_path):
    creds = tmp_path / "u.creds"
    creds.write_text(creds_text())
    seedfile = tmp_path / "u.nk"
    seedfile.write_bytes(SEED + b"\n")
    assert load_creds(str(creds)) == (JWT, SEED)
    assert read_seed(str(seedfile)) == SEED and read_seed(SEED.decode()) == SEED
    assert read_credentials(Options(creds=str(creds))) == (JWT, SEED)
    assert read_credentials(Options(nkey_seed=str(seedfile))) == (None, SEED)
    assert read_credentials(Options()) is None
    # an unreadable file is an error value, for the engine to report when asked for credentials
    err = read_credentials(Options(creds=str(tmp_path / "missing.creds")))
    assert isinstance(err, NatsError) and err.code == "ErrAuthorization"
    err = read_credentials(Options(nkey_seed=str(tmp_path / "empty.nk")))
    assert isinstance(err, NatsError) and err.code == "ErrAuthorization"
