#!/usr/bin/python3
"""run.py - LLVM's own libomptarget tests, on the stock plugin and through
omptarget-mpirun: the label llvm-suite (docs/testing.md, "The llvm-suite
label").

usage: run.py check VERSION [options]     the label's test for one version
       run.py refresh VERSION [options]   rewrites expected-VERSION.txt
       run.py run VERSION COLUMN [options]  one column, printed, no verdict

VERSION is 14, 15, 16 or 19; COLUMN is stock or ours.

The suite is the one of Debian's llvm-toolchain-VERSION source
(fetch.sh puts it in .deps/llvm-suite/VERSION). It is run by that
version's own lit (Debian's llvm-VERSION-tools), with the version's own
lit.site.cfg.in filled in as LLVM's CMake would for the target
x86_64-pc-linux-gnu, so every RUN line means what it means upstream:
the lit.cfg's substitutions, "echo ignored-command" for other targets,
REQUIRES/UNSUPPORTED/XFAIL, `not`, `%not --crash`, FileCheck, all lit's.

- stock: the programs run on their own, on the stock libomptarget of that
  version and its in-process x86_64 plugin (Debian's libomp5-VERSION).
- ours: the same compile commands, through launch-cc.sh, which makes each
  executable a script that runs it with `omptarget-mpirun -n 3`.

`check` runs the ours column and compares it with the stock column cached
in expected-VERSION.txt (`refresh` rewrites that file; it names the source
and the compiler, and `check` refuses a file made from others). It fails
when a test the stock plugin passes does not pass through the launcher,
unless by-design.txt says how it ends (an exit status and a line of the
output, both checked, and no fault after the region's) or exceptions.txt
lists it with its reason; when a listed test passes (the entry is stale)
or is not in the suite; and when no run had this plugin on 3 ranks. A
crash is a crash in both columns: the launcher reports a program (rank 0)
or a region that died of signal N as 128 + N, and launch-cc.sh's run
script then dies of N itself, as lit's `not` expects.
Exit status 77 (skipped) when the suite, the tools or the runtime are
missing, with the reason.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TARGET = "x86_64-pc-linux-gnu"
RANKS = 3
SKIP = 77
# --proxied: the ours column with every region on another plugin's device,
# each device rank serving its node's host plugin (as proxied devices) and
# no CPU device of its own. Its lines in exceptions.txt and by-design.txt
# are those of VERSION + "p" (14p).
PROXIED_ENV = ("OMPTARGET_MPI_REMOTE_PLUGINS=host", "OMPTARGET_MPI_CPU_DEVICES=off")
# One test's time limit (lit --timeout), in each column. The slowest
# take about 25 s through the launcher on a loaded 2-core machine.
TEST_TIMEOUT = 120

# Per version: where the suite is in the source tree, its project's
# CMakeLists.txt (LIBOMPTARGET_ALL_TARGETS) and OpenMPTesting.cmake (the
# OpenMP flags), and the stock runtime (OTM_LLVM<V>_DIR as the omp<V>
# labels use it; 14 is installed).
SUITE = {
    "14": ("openmp/libomptarget/test", "openmp/libomptarget/CMakeLists.txt",
           "openmp/cmake/OpenMPTesting.cmake"),
    "15": ("openmp/libomptarget/test", "openmp/libomptarget/CMakeLists.txt",
           "openmp/cmake/OpenMPTesting.cmake"),
    "16": ("openmp/libomptarget/test", "openmp/libomptarget/CMakeLists.txt",
           "openmp/cmake/OpenMPTesting.cmake"),
    "19": ("offload/test", "offload/CMakeLists.txt", "offload/cmake/OpenMPTesting.cmake"),
}


# The keys of exceptions.txt and by-design.txt: a version, or a version
# through proxied devices (--proxied).
KEYS = set(SUITE) | set(v + "p" for v in SUITE)


class Skip(Exception):
    """A missing piece: the version's test is skipped, with the reason."""


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def default_runtime(version):
    """The stock runtime's prefix: /usr/lib/llvm-14 (installed) or the
    unpacked libomp-VERSION-dev and libomp5-VERSION of ci/setup.sh."""
    if version == "14":
        return "/usr/lib/llvm-14"
    base = os.environ.get("OTM_LLVM%s_DIR" % version,
                          os.path.join(ROOT, ".deps", "llvm-" + version))
    return os.path.join(base, "usr", "lib", "llvm-" + version)


class Version:
    """What the lit.site.cfg.in of one version is filled in with."""

    def __init__(self, version, suite_dir, runtime):
        self.version = version
        self.source_dir = os.path.join(suite_dir, version)
        rel, cmakelists, testing = SUITE[version]
        self.suite = os.path.join(self.source_dir, rel)
        if not os.path.isfile(os.path.join(self.suite, "lit.site.cfg.in")):
            raise Skip("LLVM %s's suite is not in %s: run tests/llvm-suite/fetch.sh "
                       "(ci/setup.sh does)" % (version, self.source_dir))
        self.source = read(os.path.join(self.source_dir, ".source")).strip()
        llvm = "/usr/lib/llvm-" + version
        self.llvm = llvm
        self.clang = os.path.join(llvm, "bin", "clang")
        self.clangxx = os.path.join(llvm, "bin", "clang++")
        self.filecheck = os.path.join(llvm, "bin", "FileCheck")
        self.not_ = os.path.join(llvm, "bin", "not")
        self.lit = os.path.join(llvm, "build", "utils", "lit", "lit.py")
        for tool, package in ((self.clang, "clang-" + version),
                              (self.filecheck, "llvm-%s-tools" % version),
                              (self.not_, "llvm-%s-tools" % version),
                              (self.lit, "llvm-%s-tools" % version)):
            if not os.path.exists(tool):
                raise Skip("%s not found: install Debian's %s (ci/setup.sh does)"
                           % (tool, package))
        # The stock runtime: libomptarget with its plugins, libomp, omp.h.
        self.libdir = os.path.join(runtime, "lib")
        include = [os.path.join(runtime, "lib", "clang", d, "include")
                   for d in sorted(os.listdir(os.path.join(runtime, "lib", "clang")))
                   ] if os.path.isdir(os.path.join(runtime, "lib", "clang")) else []
        include = [d for d in include if os.path.isfile(os.path.join(d, "omp.h"))]
        if not include or not any(n.startswith("libomptarget.so")
                                  for n in os.listdir(self.libdir)):
            raise Skip("LLVM %s's libomp and libomptarget not found in %s: run "
                       "ci/setup.sh" % (version, runtime))
        self.include = include[0]
        self.full_version = subprocess.run(
            [self.clang, "-dumpversion"], capture_output=True, text=True,
            check=True).stdout.strip()
        self.all_targets = self._all_targets(os.path.join(self.source_dir, cmakelists))
        self.openmp_flags = self._openmp_flags(os.path.join(self.source_dir, testing))

    @staticmethod
    def _all_targets(path):
        # set (LIBOMPTARGET_ALL_TARGETS "${LIBOMPTARGET_ALL_TARGETS} TRIPLE")
        found = re.findall(r'set\s*\(\s*LIBOMPTARGET_ALL_TARGETS\s+"([^"]*)"\s*\)', read(path))
        targets = []
        for value in found:
            targets += [w for w in value.split() if not w.startswith("${")]
        if TARGET not in targets:
            raise SystemExit("run.py: %s not among LIBOMPTARGET_ALL_TARGETS of %s"
                             % (TARGET, path))
        return targets

    @staticmethod
    def _openmp_flags(path):
        # The in-tree value (Debian builds LLVM's runtimes in its tree), e.g.
        # "-fopenmp ${OPENMP_TEST_COMPILER_THREAD_FLAGS} -fno-experimental-isel";
        # the thread flags are -pthread on Linux.
        found = re.findall(r'set\(OPENMP_TEST_COMPILER_OPENMP_FLAGS\s+"(-fopenmp[^"]*)"\)',
                           read(path))
        if len(found) != 1:
            raise SystemExit("run.py: no single in-tree OPENMP_TEST_COMPILER_OPENMP_FLAGS "
                             "in %s" % path)
        return found[0].replace("${OPENMP_TEST_COMPILER_THREAD_FLAGS}", "-pthread")

    def features(self):
        major_minor = ".".join(self.full_version.split(".")[:2])
        return ["clang", "clang-" + self.version, "clang-" + major_minor,
                "clang-" + self.full_version]

    def site_values(self, work, cc, cxx):
        """@VAR@ of lit.site.cfg.in: what LLVM's CMake gives them for the
        target TARGET, with Debian's runtime in place of the build tree."""
        return {
            "AUTO_GEN_COMMENT": "## Written by omptarget-mpi's tests/llvm-suite/run.py.",
            "CMAKE_BINARY_DIR": work,
            "CMAKE_CURRENT_BINARY_DIR": work,
            "CMAKE_CURRENT_SOURCE_DIR": self.suite,
            "CMAKE_SYSTEM_NAME": "Linux",
            "CURRENT_TARGET": TARGET,
            "LIBOMPTARGET_ALL_TARGETS": " ".join(self.all_targets),
            "OPENMP_TEST_C_COMPILER": cc,
            "OPENMP_TEST_CXX_COMPILER": cxx,
            "OPENMP_TEST_Fortran_COMPILER": "",          # no flang: no `flang` feature
            "OPENMP_TEST_COMPILER_FEATURES": repr(self.features()),
            "OPENMP_TEST_OPENMP_FLAGS": self.openmp_flags,
            "OPENMP_TEST_FLAGS": "",                     # the CMake default
            "OPENMP_FILECHECK_EXECUTABLE": self.filecheck,
            "OPENMP_NOT_EXECUTABLE": self.not_,
            # No CUDA, no AMD GPU.
            "CUDA_TOOLKIT_ROOT_DIR": "", "CUDA_ROOT": "", "CUDA_LIBDIR": "",
            "LIBOMPTARGET_DEP_CUDA_ARCH": "", "LIBOMPTARGET_AMDGPU_DETECTED_ARCH_LIST": "",
            # The runtime's directories: in LLVM's tree, the build's lib/; here
            # Debian's, which holds libomptarget, its plugins, libomp and
            # (19) libomptarget.devicertl.a.
            "LIBOMPTARGET_LIBRARY_DIR": self.libdir,
            "LIBOMPTARGET_LLVM_LIBRARY_DIR": self.libdir,
            "LIBOMPTARGET_LLVM_LIBRARY_INTDIR": self.libdir,
            "LIBOMPTARGET_OPENMP_HEADER_FOLDER": self.include,
            "LIBOMPTARGET_OPENMP_HOST_RTL_FOLDER": self.libdir,
            # Debian's libomptarget is built without its debug output
            # (LIBOMPTARGET_ENABLE_DEBUG off), with OMPT (19's default on
            # x86_64 Linux), without the GPU libc.
            "LIBOMPTARGET_DEBUG": "False",
            "LIBOMPTARGET_OMPT_SUPPORT": "True",
            "LIBOMPTARGET_GPU_LIBC_SUPPORT": "False",
        }


def write_site_cfg(ver, work, cc, cxx):
    """WORK/TARGET/lit.site.cfg, as LLVM's CMake configures it; returns
    the directory lit is given."""
    values = ver.site_values(work, cc, cxx)
    text = read(os.path.join(ver.suite, "lit.site.cfg.in"))

    def fill(m):
        if m.group(1) not in values:
            raise SystemExit("run.py: %s of LLVM %s's lit.site.cfg.in has no value here"
                             % (m.group(0), ver.version))
        return values[m.group(1)]
    text = re.sub(r"@([A-Za-z_0-9]+)@", fill, text)
    # The runtime's directory is where an installed runtime's libraries are
    # found: libomptarget 15 and 16 open their plugins through libLLVM's
    # dlopen, which searches the system's directories (Debian installs the
    # plugins there), not libomptarget's own; the unpacked runtime is not
    # among them. In both columns (the launcher puts its own directory
    # first).
    text += ("\n# Added by run.py: find the runtime as if installed.\n"
             "config.environment['LD_LIBRARY_PATH'] = %r\n" % ver.libdir)
    site = os.path.join(work, TARGET)
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(site, "lit.site.cfg"), "w", encoding="utf-8") as f:
        f.write(text)
    return site


def clean_environment():
    """The environment lit starts from: nothing of the caller's that
    would change a run (lit passes LD_LIBRARY_PATH and LD_PRELOAD to the
    tests, lit.cfg some LIBOMPTARGET_* and OMP_* variables)."""
    env = dict(os.environ)
    for name in list(env):
        if (name in ("LD_LIBRARY_PATH", "LD_PRELOAD", "CHECK_OPENMP_ENV",
                     "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "IS_APU")
                or name.startswith(("LIBOMPTARGET_", "OMP_", "OMPTARGET_", "OMPCLUSTER_",
                                    "LIBOMP_", "KMP_", "HSA_", "PMI_", "PMIX_", "OMPI_"))):
            del env[name]
    return env


def run_lit(ver, column, work, launcher, jobs, filt, log, results):
    """lit on the suite in WORK; returns the seconds it took."""
    if column == "ours":
        wrap = " ".join(shlex.quote(w) for w in (
            "sh", os.path.join(HERE, "launch-cc.sh"), launcher, str(RANKS), log)) + " "
        cc, cxx = wrap + ver.clang, wrap + ver.clangxx
    else:
        cc, cxx = ver.clang, ver.clangxx
    site = write_site_cfg(ver, work, cc, cxx)
    cmd = [sys.executable, ver.lit, "-q", "--no-progress-bar", "-j", str(jobs),
           "--timeout", str(TEST_TIMEOUT), "-o", results]
    if filt:
        cmd += ["--filter", filt]
    cmd.append(site)
    start = time.time()
    # lit exits 1 when a test fails: the results file says which.
    lit = subprocess.run(cmd, env=clean_environment(), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    seconds = time.time() - start
    if not os.path.isfile(results):
        sys.stdout.write(lit.stdout)
        raise SystemExit("run.py: lit wrote no results (status %d)" % lit.returncode)
    return seconds


def run_column(ver, column, work, launcher, jobs, filt, again=False):
    """Runs lit on the whole suite (or the tests FILT matches) in one
    column; returns ({test: lit result code}, {test: [runs]}, {test: lit's
    output}, seconds).
    AGAIN: no run, the results the last one left in WORK."""
    log = os.path.join(work, "runs.log")
    results = os.path.join(work, "results.json")
    site = os.path.join(work, TARGET)
    seconds = 0
    if not again:
        if os.path.isdir(work):
            shutil.rmtree(work)
        os.makedirs(work)
        seconds = run_lit(ver, column, work, launcher, jobs, filt, log, results)
    codes, outputs = {}, {}
    prefix = "libomptarget :: %s :: " % TARGET
    for test in json.loads(read(results))["tests"]:
        name = test["name"]
        if name.startswith(prefix):
            codes[name[len(prefix):]] = test["code"]
            outputs[name[len(prefix):]] = test.get("output", "")
    # The runs launch-cc.sh logged, by test: lit's %t of TEST is
    # WORK/TARGET/<dir of TEST>/Output/<file of TEST>.tmp.
    runs = {}
    if os.path.isfile(log):
        for line in read(log).splitlines():
            prog, status, crash, by, ranks = line.rsplit(" ", 4)
            rel = os.path.relpath(prog, site)
            m = re.match(r"(.*?)/?Output/([^/]+?)\.tmp", rel)
            if not m:
                continue
            test = os.path.join(m.group(1), m.group(2))
            runs.setdefault(test, []).append(Run(int(status), crash == "crash", by,
                                                 ranks == str(RANKS), prog))
    return codes, runs, outputs, seconds


class Run:
    """One run through the launcher, as launch-cc.sh's script logged it."""

    def __init__(self, status, crash, by, plugin, program):
        self.status = status    # the launcher's exit status
        self.crash = crash      # the job died of a signal (status 129..159)
        self.by = by            # started by `not`, `not--crash` or not (-)
        self.plugin = plugin    # our plugin started on RANKS ranks (the map)
        self.program = program  # the executable launch-cc.sh ran (OUT.bin)


# lit's result codes that are a success; UNSUPPORTED is neither.
SUCCESS = ("PASS", "XFAIL")


def expected_path(version):
    return os.path.join(HERE, "expected-%s.txt" % version)


def identity(ver):
    """What the stock column depends on besides the machine: the suite's
    source and the compiler."""
    return "%s, clang %s" % (ver.source, ver.full_version)


def write_expected(ver, codes, seconds):
    with open(expected_path(ver.version), "w", encoding="utf-8") as f:
        f.write("# LLVM %s's libomptarget tests on the stock libomptarget %s and its\n"
                "# in-process plugin (target %s): lit's result for each test.\n"
                "# Written by `tests/llvm-suite/run.py refresh %s`; do not edit.\n"
                % (ver.version, ver.version, TARGET, ver.version))
        f.write("source %s\n" % identity(ver))
        for test in sorted(codes):
            f.write("%s %s\n" % (codes[test], test))


def read_expected(ver):
    path = expected_path(ver.version)
    if not os.path.isfile(path):
        raise SystemExit("run.py: %s missing: run `tests/llvm-suite/run.py refresh %s`"
                         % (path, ver.version))
    codes = {}
    source = None
    for line in read(path).splitlines():
        if not line or line.startswith("#"):
            continue
        key, rest = line.split(" ", 1)
        if key == "source":
            source = rest
        else:
            codes[rest] = key
    if source != identity(ver):
        raise SystemExit("run.py: %s was made from %s, this suite is %s: run "
                         "`tests/llvm-suite/run.py refresh %s`"
                         % (os.path.basename(path), source, identity(ver), ver.version))
    return codes


def read_exceptions(version):
    """exceptions.txt: `VERSIONS TEST REASON` (VERSIONS: 19, or 14,15,16),
    for tests the stock plugin passes and the launcher does not, by design
    or as a known gap."""
    found = {}
    for line in read(os.path.join(HERE, "exceptions.txt")).splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) < 3:
            raise SystemExit("run.py: exceptions.txt: no reason in %r" % line)
        versions = parts[0].split(",")
        if not set(versions) <= KEYS:
            raise SystemExit("run.py: exceptions.txt: unknown version in %r" % line)
        if version in versions:
            found[parts[1]] = parts[2]
    return found


class ByDesign:
    """A by-design.txt line: how a test ends through the launcher, checked."""

    def __init__(self, status, line, reason):
        self.status = status    # the launcher's exit status of every run
        self.line = line        # a line the output must contain
        self.reason = reason

    def mismatch(self, test_runs, output):
        """Why this run of the test does not end as the line says, or None."""
        if not test_runs:
            return "no run through the launcher was logged"
        statuses = sorted(set(r.status for r in test_runs))
        if statuses != [self.status]:
            return "exit status %s, not %d" % ("/".join(map(str, statuses)), self.status)
        if self.line not in output:
            # lit shows a program's output only when a check on it failed,
            # and a test's FileCheck may pass on the fault report's own
            # digits: then the program is run once more, to read it.
            status, output = self.run_again(test_runs[-1])
            if status != self.status:
                return "run again: exit status %d, not %d" % (status, self.status)
            if self.line not in output:
                return "the output lacks %r" % self.line
        if SECOND_FAULT in output:
            return "a device faulted again after the region (%r)" % SECOND_FAULT
        return None

    @staticmethod
    def run_again(run):
        """The exit status and output (stdout and stderr) of the script
        launch-cc.sh wrote for RUN's program, run with no argument: the
        launcher's status (the script dies of signal N for 128 + N)."""
        script = run.program[:-len(".bin")]
        try:
            p = subprocess.run([script], env=clean_environment(), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, errors="replace",
                               timeout=TEST_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as e:
            return -1, str(e)
        return (128 - p.returncode if p.returncode < 0 else p.returncode), p.stdout


# The plugin's report of a fault outside any region: after a region's
# fault has ended the job, a second one means the end was not clean.
SECOND_FAULT = "outside any target region"


def read_by_design(version):
    """by-design.txt: `VERSIONS TEST STATUS | LINE | REASON`, for tests
    that end, through the launcher, as the design chooses."""
    found = {}
    for line in read(os.path.join(HERE, "by-design.txt")).splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = [f.strip() for f in line.split("|")]
        head = fields[0].split()
        if len(fields) != 3 or len(head) != 3 or not head[2].isdigit() or not fields[1]:
            raise SystemExit("run.py: by-design.txt: not `VERSIONS TEST STATUS | LINE | "
                             "REASON`: %r" % line)
        versions = head[0].split(",")
        if not set(versions) <= KEYS:
            raise SystemExit("run.py: by-design.txt: unknown version in %r" % line)
        if version in versions:
            found[head[1]] = ByDesign(int(head[2]), fields[1], fields[2])
    return found


def check(ver, codes, runs, seconds, outputs, key):
    """The label's verdict for one version (its lines: those of KEY);
    prints the table, returns the exit status."""
    stock = read_expected(ver)
    exceptions = read_exceptions(key)
    by_design = read_by_design(key)
    both = sorted(set(exceptions) & set(by_design))
    if both:
        raise SystemExit("run.py: in both exceptions.txt and by-design.txt: %s"
                         % ", ".join(both))
    problems = []
    rows = []
    counts = {"stock": 0, "ours": 0, "by design": 0, "exception": 0}
    for test in sorted(set(stock) | set(codes)):
        s, o = stock.get(test, "-"), codes.get(test, "-")
        passed = o in SUCCESS
        notes = []
        if s in SUCCESS:
            counts["stock"] += 1
        if passed:
            counts["ours"] += 1
            for listed, name in ((exceptions, "exceptions.txt"), (by_design, "by-design.txt")):
                if test in listed:
                    notes.append("passes: remove it from " + name)
                    problems.append("%s: %s" % (test, notes[-1]))
        elif s in SUCCESS:
            if test in by_design:
                why = by_design[test].mismatch(runs.get(test, []), outputs.get(test, ""))
                if why:
                    notes.append("NOT AS DESIGNED: " + why)
                    problems.append("%s: %s (by-design.txt)" % (test, notes[-1]))
                else:
                    counts["by design"] += 1
                    notes.append("by design: " + by_design[test].reason)
            elif test in exceptions:
                counts["exception"] += 1
                notes.append("exception: " + exceptions[test])
            else:
                notes.append("REGRESSION: the stock plugin passes it")
                problems.append("%s: %s through the launcher, %s" % (test, o, notes[-1]))
        else:
            for listed, name in ((exceptions, "exceptions.txt"), (by_design, "by-design.txt")):
                if test in listed:
                    notes.append("listed in %s, but the stock plugin does not pass it" % name)
                    problems.append("%s: %s" % (test, notes[-1]))
        if s != o or notes:
            rows.append((test, s, o, "; ".join(notes)))
    for listed, name in ((exceptions, "exceptions.txt"), (by_design, "by-design.txt")):
        for test in listed:
            if test not in stock:
                problems.append("%s: in %s but not in LLVM %s's suite"
                                % (test, name, ver.version))

    print("LLVM %s's libomptarget suite (%s), %s, ours on %d ranks%s (%.0f s):"
          % (ver.version, ver.source, TARGET, RANKS,
             ", every region on a proxied host-plugin device" if key.endswith("p") else "",
             seconds))
    if rows:
        width = max(len(r[0]) for r in rows)
        print("  %-*s  %-11s  %-11s" % (width, "test (where the columns differ)", "stock", "ours"))
        for test, s, o, note in rows:
            print("  %-*s  %-11s  %-11s  %s" % (width, test, s, o, note))
    all_runs = [r for rs in runs.values() for r in rs]
    on_plugin = sum(1 for r in all_runs if r.plugin)
    print("  %d program runs through the launcher, %d of them with this plugin on %d ranks"
          % (len(all_runs), on_plugin, RANKS))
    if not on_plugin:
        problems.append("no run had this plugin on %d ranks: the column did not test it"
                        % RANKS)
    tally = {}
    for code in codes.values():
        tally[code] = tally.get(code, 0) + 1
    print("  lit's results through the launcher: %s"
          % ", ".join("%s %d" % (c, n) for c, n in sorted(tally.items())))
    summary = ("llvm-suite %s: stock pass %d, ours pass %d, by design %d, exceptions %d"
               % (key, counts["stock"], counts["ours"], counts["by design"],
                  counts["exception"]))
    print(summary)
    if problems:
        print("FAILED:")
        for p in problems:
            print("  " + p)
        return 1
    return 0


def proxied_launcher(launcher, work):
    """A launcher that runs the job with PROXIED_ENV (lit cleans the
    environment the tests start from), beside WORK."""
    path = work.rstrip("/") + ".launcher"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("#!/bin/sh\nexport %s\nexec %s \"$@\"\n"
                % (" ".join(PROXIED_ENV), shlex.quote(launcher)))
    os.chmod(path, 0o755)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=("check", "refresh", "run"))
    ap.add_argument("version", choices=sorted(SUITE))
    ap.add_argument("column", nargs="?", choices=("stock", "ours"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help="the project's build tree (its bin/omptarget-mpirun)")
    ap.add_argument("--suite-dir", default=os.environ.get(
        "OTM_LLVM_SUITE_DIR", os.path.join(ROOT, ".deps", "llvm-suite")),
                    help="where fetch.sh put the suites")
    ap.add_argument("--runtime", help="the stock runtime's prefix (default: "
                    "/usr/lib/llvm-14, else .deps/llvm-VERSION/usr/lib/llvm-VERSION)")
    ap.add_argument("--work", help="the directory lit works in (default: "
                    "BUILD/tests/llvm-suite/VERSION-COLUMN)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--again", action="store_true",
                    help="no run: read the results the last run left in the work directory")
    ap.add_argument("--filter", help="only the tests this regular expression matches "
                    "(lit --filter; not with check or refresh)")
    ap.add_argument("--proxied", action="store_true",
                    help="the ours column with every region on a device of the node's "
                    "host plugin, proxied by the device ranks (%s)" % " ".join(PROXIED_ENV))
    args = ap.parse_args()
    if args.mode == "run" and not args.column:
        ap.error("run needs a COLUMN")
    if args.mode != "run" and args.filter:
        ap.error("--filter is for run only: check and refresh take the whole suite")
    column = {"check": "ours", "refresh": "stock"}.get(args.mode, args.column)

    try:
        try:
            import psutil  # noqa: F401  (lit's --timeout needs it)
        except ImportError:
            raise Skip("%s has no psutil, which lit's per-test time limit needs: "
                       "install python3-psutil (ci/setup.sh does)" % sys.executable)
        ver = Version(args.version, args.suite_dir,
                      args.runtime or default_runtime(args.version))
        launcher = os.path.join(os.path.abspath(args.build), "bin", "omptarget-mpirun")
        if column == "ours":
            plugin = os.path.join(args.build, "lib", "libomptarget.rtl.mpi.so")
            for need in (launcher, plugin):
                if not os.path.exists(need):
                    raise Skip("%s not found: build the project" % need)
            if args.version == "19" and not os.path.exists(os.path.join(
                    args.build, "lib", "omptarget-mpi", "libomptarget.so.19.1")):
                raise Skip("libomptarget 19 with omptarget-mpi inside is not in the build "
                           "tree: ci/llvm19.sh builds it (ci/setup.sh runs it)")
    except Skip as why:
        print("llvm-suite %s: skipped: %s" % (args.version, why))
        return SKIP

    if args.proxied and column != "ours":
        ap.error("--proxied is for the ours column (check, run ours)")
    key = args.version + ("p" if args.proxied else "")
    work = args.work or os.path.join(os.path.abspath(args.build), "tests", "llvm-suite",
                                     "%s-%s" % (key, column))
    if args.proxied:
        launcher = proxied_launcher(launcher, work)
    codes, runs, outputs, seconds = run_column(ver, column, work, launcher, args.jobs,
                                               args.filter, args.again)
    if not codes:
        raise SystemExit("run.py: lit ran no test")
    if args.mode == "refresh":
        write_expected(ver, codes, seconds)
        n = sum(1 for c in codes.values() if c in SUCCESS)
        print("llvm-suite %s: stock pass %d of %d tests (%.0f s); wrote %s"
              % (args.version, n, len(codes), seconds, expected_path(args.version)))
        return 0
    if args.mode == "run":
        for test in sorted(codes):
            notes = ["the job crashed under %s" % ("no `not`" if r.by == "-" else "`%s`" % r.by.replace("--", " --"))
                     for r in runs.get(test, []) if r.crash]
            print("%-11s %s%s" % (codes[test], test, "  (%s)" % "; ".join(notes) if notes else ""))
        print("llvm-suite %s %s: pass %d of %d tests (%.0f s)"
              % (args.version, column, sum(1 for c in codes.values() if c in SUCCESS),
                 len(codes), seconds))
        return 0
    return check(ver, codes, runs, seconds, outputs, key)


if __name__ == "__main__":
    sys.exit(main())
