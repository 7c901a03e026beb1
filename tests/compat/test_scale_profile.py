"""tclnats_py.compat.scale_profile: the CPU seconds of a process tree by
role, read from /proc, and what the long form concludes from them."""

import subprocess
import sys

import pytest

from tclnats_py.compat import scale_profile as prof

pytestmark = pytest.mark.skipif(not prof.available(), reason="needs Linux's /proc")


def test_roles_from_command_lines_and_parents():
    assert prof.role(1, "/usr/bin/nats-server -p 4222", None) == "nats-server"
    java = "/usr/lib/jvm/bin/java -cp x org.apache.spark.executor.CoarseGrainedExecutorBackend --driver-url"
    assert prof.role(1, java, "worker JVMs") == "executor JVMs"
    assert prof.role(1, "java -cp x org.apache.spark.deploy.worker.Worker spark://", None) == "worker JVMs"
    assert prof.role(1, "java -cp x org.apache.spark.deploy.master.Master", None) == "master JVM"
    assert prof.role(1, "python3 -m pyspark.daemon", "executor JVMs") == "Python workers"
    assert prof.role(1, "python3 -m pyspark.daemon", "Python workers") == "Python workers"
    assert prof.role(1, "java -cp x org.apache.spark.deploy.SparkSubmit pyspark-shell", "driver Python") == "driver JVM"


def test_a_busy_child_is_counted_under_its_parent():
    busy = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass\n"
    with prof.CpuProfile(lambda: [__import__("os").getpid()]) as p:
        subprocess.run([sys.executable, "-c", busy], check=True)
    r = p.result
    # the child (reaped during the profile) counts in this process's CPU, the driver Python's
    assert r["cpu_s"]["driver Python"] >= 0.35
    assert r["machine_busy_s"] >= 0.35 and r["wall_s"] >= 0.35 and r["cores"] >= 1
    assert 0 < r["ours_of_cores"] <= r["machine_of_cores"] + 0.05


def test_the_bound_and_the_line_say_what_the_cores_did():
    busy = {"wall_s": 5.0, "cores": 2, "cpu_s": {"nats-server": 2.6, "Python workers": 1.0, "master JVM": 0.0001},
            "ours_s": 3.6, "machine_busy_s": 9.8, "ours_of_cores": 0.36, "machine_of_cores": 0.98}
    assert prof.bound(busy).startswith("CPU-bound") and "other programs 62%" in prof.bound(busy)
    idle = dict(busy, machine_busy_s=4.0, machine_of_cores=0.4)
    assert prof.bound(idle).startswith("not CPU-bound")
    line = prof.describe(busy, 1_000_000)
    assert "nats-server 2.6, Python workers 1.0" in line and "master JVM" not in line
