"""docs/python.md: message schedules (type-checked as users write them)."""

import asyncio, datetime, tclnats_py

async def main() -> None:
    nc = await tclnats_py.connect("nats://localhost:4222")
    js = nc.jetstream()
    await js.create_stream("JOBS", subjects=["sched.>", "jobs.>"], allow_msg_schedules=True, allow_msg_ttl=True)
    cons = await js.create_consumer("JOBS", durable_name="W", filter_subject="jobs.>")
    soon = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1)
    await js.publish_schedule("sched.reminders.r1", b"reminder", target="jobs.remind", at=soon)
    await js.publish_schedule("sched.report", b"run", target="jobs.report", cron="0 0 6 * * mon-fri",
                              time_zone="Europe/Amsterdam", ttl=3600)
    (m,) = await cons.fetch(1, max_wait=10)
    print(m.data, m.headers["Nats-Scheduler"], m.headers["Nats-Schedule-Next"])
    await js.purge_stream("JOBS", filter="sched.report")   # cancels that schedule
    await nc.close()

asyncio.run(main())
