"""One measurement per fresh process, shared by the CUDA and HIP comparison scripts."""
import json
import os
import statistics
import subprocess


def run(argv, env, raw):
    """Runs argv with env added to the environment; returns the JSON of its last output line,
    also written (with its arguments) to the open file raw when given. RuntimeError when it
    fails."""
    done = subprocess.run(argv, env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr}")
    line = json.loads(done.stdout.strip().splitlines()[-1])
    if raw:
        raw.write(json.dumps({"argv": argv[1:], **line}) + "\n")
    return line


def median(lines, field="ms"):
    """The median of field over measurements returned by run()."""
    return statistics.median(line[field] for line in lines)


def quartiles(values):
    """(first quartile, median, third quartile) of values."""
    ordered = sorted(values)
    return ordered[len(ordered) // 4], statistics.median(ordered), ordered[3 * len(ordered) // 4]
