#!/usr/bin/env python3
"""The packages install and run on a clean machine: `cpack` makes the .tar.gz and the .deb, each is
unpacked into an empty directory tree (as a fresh container would hold it), and the cuaudit in it
prints its version and reports the golden run with no file of the build directory in reach. Also
`cmake --install --strip`, and the man page names every option the commands take. The LGPL
libraries (elfutils' libdw and libelf) are shared, never copied into the tool: the .tar.gz carries
them beside it, where the tool loads them from and where a user can put another build; the .deb
depends on Debian's instead. Lintian finds no error or warning in the .deb, and the notices name
every library the tool carries or links."""
import argparse
import glob
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from golden_run import finish  # noqa: E402


def installed_tree_works(name, root, golden, failures):
    """cuaudit from `root`/usr (or `root`) reports the golden run; returns nothing, notes failures."""
    tools = glob.glob(os.path.join(root, "**", "bin", "cuaudit"), recursive=True)
    if len(tools) != 1:
        failures.append("%s: expected one bin/cuaudit, found %s" % (name, tools))
        return
    prefix = os.path.dirname(os.path.dirname(tools[0]))
    for needed in ["lib/cuaudit/libcuaudit-injection.so", "lib/cuaudit/libcuaudit-preload.so",
                   "share/man/man1/cuaudit.1.gz", "share/doc/cuaudit/LICENSE", "share/doc/cuaudit/THIRD_PARTY_NOTICES.txt",
                   "share/doc/cuaudit/copyright", "share/doc/cuaudit/changelog.gz", "share/doc/cuaudit/docs/EXIT_CODES.md"]:
        if not os.path.exists(os.path.join(prefix, needed)):
            failures.append("%s: %s is missing" % (name, needed))
    # A clean environment: no build directory on any search path.
    env = {"PATH": "/usr/bin:/bin", "HOME": root}
    version = subprocess.run([tools[0], "-V"], stdout=subprocess.PIPE, text=True, env=env)
    if version.returncode != 0 or "commit" not in version.stdout:
        failures.append("%s: cuaudit -V: %s" % (name, version.stdout))
    # --help and `help COMMAND` name the documentation installed beside the tool; the man page's
    # paths are the .deb's (/usr) and must be in the tree under that prefix.
    for command in [["--help"], ["help", "report"], ["help", "merge"], ["help", "suppressions"]]:
        text = subprocess.run([tools[0]] + command, stdout=subprocess.PIPE, text=True, env=env).stdout
        named = re.findall(r"(/\S+?\.md)\b", text)
        if not named or any(not p.startswith(os.path.join(prefix, "share/doc/cuaudit/docs/")) or not os.path.isfile(p)
                            for p in named):
            failures.append("%s: cuaudit %s names %s, not the installed documentation" % (name, " ".join(command), named))
    man = gzip.open(os.path.join(prefix, "share/man/man1/cuaudit.1.gz"), "rt").read()
    for path in sorted(set(re.findall(r"/usr/share/doc/cuaudit/docs/[A-Z_]+\.md", man))):
        if not os.path.isfile(os.path.join(prefix, path[len("/usr/"):])):
            failures.append("%s: the man page names %s, not installed" % (name, path))
    run = os.path.join(root, "golden")
    shutil.copytree(golden, run)
    out = os.path.join(root, "report.json")
    proc = subprocess.run([tools[0], "report", run, "--json", out], stderr=subprocess.PIPE, text=True, env=env)
    findings = json.load(open(out))["findings"] if os.path.exists(out) else None
    if proc.returncode != 0 or not findings or len(findings) != 2:
        failures.append("%s: report of the golden run: exit %d, %s" % (name, proc.returncode, proc.stderr[-400:]))
    else:
        print("PASS %s: installed cuaudit reports the golden run (%d findings)" % (name, len(findings)))


ELFUTILS = ["libdw.so.1", "libelf.so.1"]
NOTICED = ["Boost", "{fmt}", "nlohmann/json", "CLI11", "Capstone", "elfutils", "zlib", "liblzma", "bzip2", "Expat",
           "Protocol Buffers", "libbacktrace"]


def loaded_from(tool, env):
    """The files the loader maps for `tool -V`, by soname."""
    out = subprocess.run([tool, "-V"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(env, LD_DEBUG="libs")).stderr
    return {os.path.basename(p): p for p in re.findall(r"calling init: (\S+)", out)}


def lgpl_libraries_replaceable(name, prefix, carried, failures):
    """libdw and libelf are linked, not embedded; a tree that carries them loads its own copies, and a
    copy the user puts there instead is the one loaded."""
    tool = os.path.join(prefix, "bin", "cuaudit")
    dynamic = subprocess.run(["readelf", "-d", tool], stdout=subprocess.PIPE, text=True).stdout
    for lib in ELFUTILS:
        if "[%s]" % lib not in dynamic:
            failures.append("%s: bin/cuaudit does not link %s as a shared library" % (name, lib))
    if "$ORIGIN/../lib/cuaudit" not in dynamic:
        failures.append("%s: bin/cuaudit's run path is not $ORIGIN/../lib/cuaudit" % name)
    defined = subprocess.run(["nm", "-D", "--defined-only", tool], stdout=subprocess.PIPE, text=True).stdout
    if re.search(r" (dwarf_begin|elf_begin)$", defined, re.M):
        failures.append("%s: bin/cuaudit defines elfutils' functions itself (linked statically)" % name)
    env = {"PATH": "/usr/bin:/bin", "HOME": prefix}
    libs = os.path.join(prefix, "lib", "cuaudit")
    if not carried:
        copies = [lib for lib in ELFUTILS if os.path.exists(os.path.join(libs, lib))]
        if copies:
            failures.append("%s: carries %s, which Debian's libdw1 and libelf1 provide" % (name, copies))
        return
    loaded = loaded_from(tool, env)
    for lib in ELFUTILS:
        if os.path.realpath(loaded.get(lib, "")) != os.path.realpath(os.path.join(libs, lib)):
            failures.append("%s: %s loaded from %s, not the copy beside the tool" % (name, lib, loaded.get(lib)))
    # The user's own build of libdw, put in the carried one's place (here: a copy of the system's).
    replacement = os.path.join(libs, "libdw.so.1")
    os.remove(replacement)
    shutil.copy("/usr/lib/x86_64-linux-gnu/libdw.so.1", replacement)
    os.utime(replacement, (0, 0))
    loaded = loaded_from(tool, env)
    if os.path.realpath(loaded.get("libdw.so.1", "")) != os.path.realpath(replacement) or \
            os.stat(loaded["libdw.so.1"]).st_mtime != 0:
        failures.append("%s: a replaced libdw.so.1 was not the one loaded: %s" % (name, loaded.get("libdw.so.1")))
    else:
        print("PASS %s: elfutils loaded from lib/cuaudit, and a replacement put there is loaded" % name)


def notices_name_everything(name, prefix, failures):
    notices = open(os.path.join(prefix, "share/doc/cuaudit/THIRD_PARTY_NOTICES.txt")).read()
    missing = [lib for lib in NOTICED if lib not in notices]
    if missing:
        failures.append("%s: THIRD_PARTY_NOTICES.txt does not name %s" % (name, missing))


def lintian_clean(deb, failures):
    if not shutil.which("lintian"):
        failures.append("lintian is not installed (scripts/install-deps.sh installs it)")
        return
    out = subprocess.run(["lintian", "--tag-display-limit", "0", deb], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True).stdout
    tags = [line for line in out.splitlines() if line.startswith(("E:", "W:"))]
    if tags:
        failures.append("lintian on %s:\n%s" % (os.path.basename(deb), "\n".join(tags)))
    else:
        print("PASS lintian: no error or warning in %s" % os.path.basename(deb))


def man_page_names_every_option(cuaudit, man_page, failures):
    page = open(man_page).read().replace("\\-", "-")
    for command in [[], ["report"], ["merge"], ["diff"]]:
        help_text = subprocess.run([cuaudit] + command + ["--help"], stdout=subprocess.PIPE, text=True).stdout
        for option in re.findall(r"^\s+(?:-\w,)?(--[a-z-]+)", help_text, re.M):
            if option != "--help" and option not in page:
                failures.append("the man page does not name %s (cuaudit %s--help has it)" % (option, " ".join(command)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--man-page", required=True)
    opts = ap.parse_args()
    failures = []
    man_page_names_every_option(os.path.join(opts.build, "bin", "cuaudit"), opts.man_page, failures)
    with tempfile.TemporaryDirectory() as tmp:
        packages = os.path.join(tmp, "packages")
        proc = subprocess.run(["cpack", "--config", os.path.join(opts.build, "CPackConfig.cmake"), "-B", packages],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=opts.build)
        if proc.returncode != 0:
            failures.append("cpack failed:\n" + proc.stdout[-2000:])
            return finish(failures)
        debs = glob.glob(os.path.join(packages, "*.deb"))
        tars = glob.glob(os.path.join(packages, "*.tar.gz"))
        if len(debs) != 1 or len(tars) != 1:
            failures.append("expected one .deb and one .tar.gz, got %s" % os.listdir(packages))
            return finish(failures)
        info = subprocess.run(["dpkg-deb", "--info", debs[0]], stdout=subprocess.PIPE, text=True).stdout
        if "Package: cuaudit" not in info:
            failures.append("the .deb's control file: %s" % info)
        deb_root = os.path.join(tmp, "deb-root")
        subprocess.run(["dpkg-deb", "-x", debs[0], deb_root], check=True)
        installed_tree_works(os.path.basename(debs[0]), deb_root, opts.golden, failures)
        lgpl_libraries_replaceable(os.path.basename(debs[0]), os.path.join(deb_root, "usr"), False, failures)
        notices_name_everything(os.path.basename(debs[0]), os.path.join(deb_root, "usr"), failures)
        depends = subprocess.run(["dpkg-deb", "-f", debs[0], "Depends"], stdout=subprocess.PIPE, text=True).stdout
        if "libdw1" not in depends or "libelf1" not in depends:
            failures.append("the .deb does not depend on Debian's libdw1 and libelf1: %s" % depends)
        lintian_clean(debs[0], failures)
        tar_root = os.path.join(tmp, "tar-root")
        with tarfile.open(tars[0]) as t:
            t.extractall(tar_root)
        installed_tree_works(os.path.basename(tars[0]), tar_root, opts.golden, failures)
        tar_prefix = os.path.dirname(os.path.dirname(glob.glob(os.path.join(tar_root, "**", "bin", "cuaudit"),
                                                               recursive=True)[0]))
        notices_name_everything(os.path.basename(tars[0]), tar_prefix, failures)
        lgpl_libraries_replaceable(os.path.basename(tars[0]), tar_prefix, True, failures)
        install_root = os.path.join(tmp, "install-root")
        proc = subprocess.run(["cmake", "--install", opts.build, "--prefix", install_root, "--strip"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            failures.append("cmake --install --strip failed:\n" + proc.stdout[-2000:])
        else:
            installed_tree_works("cmake --install --strip", install_root, opts.golden, failures)
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
