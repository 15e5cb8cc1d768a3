"""The README's examples run as written (issue #38): every ``python`` block, each on its own
(its imports, its DataFrames), and the spark-submit recipe of "Running on a cluster"."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()

#: The URL of the Spark Connect example's server; the test's own server stands in for it.
CONNECT_EXAMPLE_URL = "sc://localhost:15002"


def python_blocks(text: str) -> list[tuple[int, str]]:
    """The ``python`` blocks of a Markdown text, with the line each starts on."""
    return [(text.count("\n", 0, m.start()) + 2, m.group(1))
            for m in re.finditer(r"^```python\n(.*?)^```", text, flags=re.S | re.M)]


def bash_block_after(text: str, heading: str) -> str:
    """The first ``bash`` block after ``heading``."""
    rest = text.split(heading, 1)[1]
    return rest.split("```bash\n", 1)[1].split("```", 1)[0]


BLOCKS = python_blocks(README)


def test_the_readme_has_its_examples_issue38():
    assert len(BLOCKS) >= 8
    # the first lines a user meets: the two set-up commands
    first = README.split("```bash\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert len(first) == 2 and "pip install" in first[0]


def run_block(code: str, name: str) -> dict[str, int]:
    """Run an example; return the rows of each DataFrame it leaves (so each one runs)."""
    from pyspark.sql import DataFrame

    namespace: dict = {"__name__": name}
    exec(compile(code, name, "exec"), namespace)
    return {key: value.count() for key, value in namespace.items()
            if isinstance(value, DataFrame)}


#: Runs a Spark Connect example in a process of its own (a process holds one kind of session).
CONNECT_RUNNER = f"""\
import json, sys
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
from test_readme import run_block
print("COUNTS", json.dumps(run_block(sys.stdin.read(), "README.md")))
"""


@pytest.mark.spark
@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"line{n}" for n, _ in BLOCKS])
def test_every_python_block_of_the_readme_runs_issue38(spark, connect_url, line, code,
                                                        capsys):
    assert "import" in code, f"README.md:{line}: the example shows no imports"
    if CONNECT_EXAMPLE_URL in code:
        done = subprocess.run([sys.executable, "-c", CONNECT_RUNNER],
                              input=code.replace(CONNECT_EXAMPLE_URL, connect_url),
                              capture_output=True, text=True, timeout=300, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stderr[-3000:]
        counts = json.loads(done.stdout.split("COUNTS ", 1)[1])
    else:
        counts = run_block(code, f"README.md:{line}")
    assert counts, f"README.md:{line}: the example builds no DataFrame"
    # what the example is about finds something in its own small data
    found = {n: c for n, c in counts.items() if n in ("frames", "around", "levels", "found",
                                                       "heavy", "reported")}
    assert all(found.values()), f"README.md:{line}: {found}"
    capsys.readouterr()


@pytest.mark.spark
def test_the_readmes_spark_submit_recipe_ships_windowkit_issue38(tmp_path):
    recipe = bash_block_after(README, "## Running on a cluster")
    assert "--py-files" in recipe and "windowkit.zip" in recipe
    # the recipe's zip, built as it says, into tmp_path
    build = recipe.split("\n", 1)[0]
    subprocess.run(build.replace("windowkit.zip", str(tmp_path / "windowkit.zip")), shell=True,
                   cwd=ROOT, check=True, capture_output=True, timeout=120)
    script = tmp_path / "job.py"
    script.write_text(python_blocks(README.split("## Running on a cluster", 1)[1])[0][1])
    # a Python with windowkit's dependencies but not windowkit: the main environment's
    # packages through a path entry (whose .pth files, windowkit's editable install among
    # them, are not read)
    env_dir = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    site = subprocess.run([str(env_dir / "bin" / "python"), "-c",
                           "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    python = str(env_dir / "bin" / "python")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYSPARK_GATEWAY_PORT", "SPARK_HOME")}
    check = subprocess.run([python, "-c", "import numpy, pyspark, windowkit"], env=env,
                           capture_output=True, text=True, cwd=tmp_path)
    assert "No module named 'windowkit'" in check.stderr
    env.update(PYSPARK_PYTHON=python, PYSPARK_DRIVER_PYTHON=python)
    submit = shutil.which("spark-submit", path=os.path.dirname(sys.executable))
    # the recipe's own command, from the repository's root, on local[1] with these paths
    command = recipe.split("\n", 1)[1].replace("\\\n", " ")
    for old, new in (("PYSPARK_PYTHON=/opt/env/bin/python ", ""), ("spark-submit", submit),
                     ("--master yarn", "--master local[1]"),
                     ("windowkit.zip", str(tmp_path / "windowkit.zip")),
                     ("job.py", str(script))):
        assert old in command, old
        command = command.replace(old, new)
    env.pop("PWD", None)  # the shell sets it to its working directory
    done = subprocess.run(command, shell=True, env=env, capture_output=True, text=True,
                          timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "frames: 1" in done.stdout
    # no Spark log line, not even before the session starts (the JVM's own warnings may stay)
    logged = [line for line in done.stderr.splitlines()
              if re.search(r" (INFO|WARN|ERROR) ", line) or "log4j" in line]
    assert logged == [], logged[:5]


@pytest.mark.spark
def test_the_readmes_cli_under_spark_submit_prints_no_spark_log_issue38(tmp_path):
    recipe = bash_block_after(README, "### On a cluster").replace("\\\n", " ")
    # the recipe's --driver-java-options, its shell substitution run with this Python
    option = re.search(r'--driver-java-options ("[^"]*")', recipe)
    assert option is not None, recipe
    quoted = option.group(1).replace("env/bin/python", sys.executable)
    readings = tmp_path / "readings.csv"
    readings.write_text("router,time,loss_rate\n" + "".join(
        f"r1,2024-01-01 00:{m:02d}:00,{0.01 if 3 <= m < 7 else 0.001}\n" for m in range(10)))
    main = ROOT / "windowkit" / "cli" / "__main__.py"
    submit = shutil.which("spark-submit", path=os.path.dirname(sys.executable))
    command = (f"{submit} --master local[1] --driver-java-options {quoted} {main} frames "
               f"--input {readings} --time time --by router --when 'loss_rate > 0.003' "
               f"--output {tmp_path / 'out'}")
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_GATEWAY_PORT", "PWD")}
    env.update(PYTHONPATH=str(ROOT), PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable)
    done = subprocess.run(command, shell=True, env=env, capture_output=True, text=True,
                          timeout=900, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    logged = [line for line in done.stderr.splitlines()
              if re.search(r" (INFO|WARN|ERROR) ", line) or "log4j" in line]
    assert logged == [], logged[:5]


def test_the_docs_cite_only_what_a_user_has_issue36():
    """Docstrings and comments point at the README or the code itself, never at design notes
    outside the repository."""
    outside = re.compile(r"DESIGN\.md|STYLE\.md|\.\./shared")
    cited = [f"{path.relative_to(ROOT)}:{number}"
             for folder in ("windowkit", "bench", "tests")
             for path in sorted((ROOT / folder).rglob("*.py"))
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if outside.search(line) and path != Path(__file__)]
    assert not cited, cited
