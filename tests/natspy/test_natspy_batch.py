"""Atomic batches (ADR-50) through natspy, as nats-py 2.16.0 has them: its
headers (api.Header.BATCH_*) written by the program, the commit's PubAck
(batch_id, batch_size), and a refused commit as nats-py's APIError, with
nothing of the batch stored."""

import asyncio

import pytest

from tclnats_py import natspy as nats
from tclnats_py.natspy.js import api
from tclnats_py.natspy.js import errors as js_errors


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


@pytest.mark.feature("atomic_batch")
def test_a_refused_commit_is_an_api_error_and_stores_nothing(js_server):
    async def go():
        nc = await nats.connect(js_server.url)
        js = nc.jetstream()
        await js.add_stream(name="NPBATCH", subjects=["npb.>"], allow_atomic=True)
        try:
            await js.publish("npb.a", b"0")
            hdr = {api.Header.BATCH_ID: "npb-1", api.Header.BATCH_SEQUENCE: "1"}
            await nc.publish("npb.b", b"1", headers=hdr)
            # the second message expects npb.a's last sequence to be 5: it is 1
            last = {api.Header.BATCH_ID: "npb-1", api.Header.BATCH_SEQUENCE: "2", api.Header.BATCH_COMMIT: "1",
                    api.Header.EXPECTED_LAST_SUBJECT_SEQUENCE: "5"}
            with pytest.raises(js_errors.APIError) as e:
                await js.publish("npb.a", b"2", headers=last)
            assert e.value.err_code == 10071
            assert (await js.stream_info("NPBATCH")).state.messages == 1
            # a stream without allow_atomic refuses a batch's commit
            await js.add_stream(name="NPPLAIN", subjects=["npp.>"])
            with pytest.raises(js_errors.APIError) as e:
                await js.publish("npp.a", b"1", headers={api.Header.BATCH_ID: "npb-2",
                                                         api.Header.BATCH_SEQUENCE: "1",
                                                         api.Header.BATCH_COMMIT: "1"})
            assert e.value.err_code == 10174
            await js.delete_stream("NPPLAIN")
        finally:
            await js.delete_stream("NPBATCH")
            await nc.close()
    run(go())
