"""GEM's own terminal tasks: file and text processing, archives, permissions, scripts, CSV/JSON.

Every task needs only a stock Debian with Python (bash, coreutils, grep, sed, awk, tar, gzip,
find, python3) and no network. Each has a reference ``solution`` that passes all its tests and
fails them all when nothing is done; the test suite checks both for every task. Checks compute
what they expect from the task's own starting files (``original(...)``), never from the
agent's copy, and a task names the starting files it asks to change (``mutable``): every other
one must be left as it was. Data is written
out here, deterministically, so the tasks are the same on every machine.
"""

from __future__ import annotations

import gzip
import io
import json
import random
import tarfile
from functools import lru_cache

from gem.envs.terminal.task import TerminalTask


def _lines(seed: int, n: int, make) -> str:
    rng = random.Random(seed)
    return "".join(make(rng, i) + "\n" for i in range(n))


_WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda omicron sigma tau "
          "upsilon phi chi psi omega").split()
_NAMES = ("ada bob cy dee eve fay gus hal ivy jo kim lee max ned oz pam quin rae sam tess").split()


def _tar_gz(files: dict[str, str]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for path, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(path)
            info.size, info.mtime, info.mode = len(data), 1_700_000_000, 0o644
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


_LOG = _lines(7, 120, lambda r, i: f"2024-01-{1 + i % 28:02d} {r.choice(['INFO', 'INFO', 'WARN', 'ERROR'])} "
              f"[{r.choice(['auth', 'db', 'web', 'cache'])}] event {i}")
_PEOPLE = "name,age,city\n" + _lines(3, 30, lambda r, i: f"{_NAMES[i % 20]}{i},{r.randint(5, 70)},{r.choice(['Oslo', 'Lima', 'Pune'])}")
_ORDERS = json.dumps([{"id": i, "customer": random.Random(i).choice(_NAMES[:6]),
                       "amount": round(random.Random(i * 7).uniform(1, 100), 2)} for i in range(40)], indent=1)
_USERS = json.dumps({"users": [{"name": f"{n.title()}", "active": i % 3 != 0, "age": 20 + i}
                               for i, n in enumerate(_NAMES)]}, indent=2)
_ACCESS = _lines(11, 80, lambda r, i: f"10.0.0.{r.randint(1, 9)} - - [01/Jan/2024:00:00:{i % 60:02d}] "
                 f"\"GET /{r.choice(['', 'api', 'img', 'login'])} HTTP/1.1\" {r.choice([200, 200, 200, 404, 500, 301])} {r.randint(100, 999)}")


def _t(name, instruction, files, tests, solution, difficulty="easy", category="text", setup="", **kw) -> TerminalTask:
    return TerminalTask(name=name, instruction=instruction, files=files, tests=tests, solution=solution,
                        difficulty=difficulty, category=category, setup=setup, **kw)


@lru_cache(maxsize=1)
def bundled_tasks() -> list[TerminalTask]:
    """All bundled tasks, in a fixed order (``terminal:Bundled`` draws from them by seed)."""
    T = []
    # ------------------------------------------------------------ text processing
    T.append(_t("CountLines", "Write the number of lines in `data.txt` to `count.txt` (just the number).",
                {"data.txt": _lines(1, 137, lambda r, i: f"row {r.randint(0, 999)}")},
                "def test_count():\n    assert read('count.txt').strip() == '137'\n",
                "wc -l < data.txt > count.txt"))
    T.append(_t("UniqueWords", "`words.txt` has one word per line, with repeats. Write the distinct words, sorted "
                "alphabetically, one per line, to `unique.txt`.",
                {"words.txt": _lines(2, 200, lambda r, i: r.choice(_WORDS))},
                "def test_unique():\n    assert lines('unique.txt') == sorted(set(original_lines('words.txt')))\n",
                "sort -u words.txt > unique.txt"))
    T.append(_t("ReplaceHost", "In `config.ini`, replace every occurrence of `localhost` with `db.internal`, editing "
                "the file in place. Nothing else may change.",
                {"config.ini": "[db]\nhost = localhost\nport = 5432\n[cache]\nurl = redis://localhost:6379\nname = localhost-cache\n"},
                "def test_replaced():\n    assert read('config.ini') == '[db]\\nhost = db.internal\\nport = 5432\\n[cache]\\n"
                "url = redis://db.internal:6379\\nname = db.internal-cache\\n'\n",
                "sed -i 's/localhost/db.internal/g' config.ini", mutable=('config.ini',)))
    T.append(_t("LargestFile", "Find the largest regular file (in bytes) anywhere under `files/` and write its path, "
                "relative to the workspace (like `files/a/b.bin`), to `largest.txt`.",
                {f"files/{d}/f{i}.bin": "x" * (37 * i + 11 * len(d)) for d in ("a", "bb", "a/deep") for i in range(1, 5)},
                "def test_largest():\n    assert read('largest.txt').strip() == 'files/a/deep/f4.bin'\n",
                "find files -type f -printf '%s %p\\n' | sort -n | tail -1 | cut -d' ' -f2 > largest.txt"))
    T.append(_t("ExtractEmails", "Extract every email address from `contacts.txt` and write them to `emails.txt`, one "
                "per line, sorted, without duplicates.",
                {"contacts.txt": "Call ada@example.com or bob.smith@mail.org today.\nNo email here.\n"
                 "dup: ada@example.com, new: cy_d@x.io; broken@ and @nothing\nEVE@corp.net wrote.\n"},
                "def test_emails():\n    assert lines('emails.txt') == ['EVE@corp.net', 'ada@example.com', 'bob.smith@mail.org', 'cy_d@x.io']\n",
                "grep -oE '[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]+' contacts.txt | LC_ALL=C sort -u > emails.txt"))
    T.append(_t("MergeNumbers", "`a.txt` and `b.txt` hold integers, one per line. Write all of them, sorted numerically "
                "ascending, to `merged.txt`.",
                {"a.txt": _lines(4, 25, lambda r, i: str(r.randint(-500, 500))),
                 "b.txt": _lines(5, 25, lambda r, i: str(r.randint(-500, 500)))},
                "def test_merged():\n    want = sorted(int(x) for x in original_lines('a.txt') + original_lines('b.txt'))\n"
                "    assert [int(x) for x in lines('merged.txt')] == want\n",
                "sort -n a.txt b.txt > merged.txt"))
    T.append(_t("LineSlice", "Write lines 10 to 20 (inclusive, counting from 1) of `log.txt` to `slice.txt`.",
                {"log.txt": _LOG},
                "def test_slice():\n    assert lines('slice.txt') == original_lines('log.txt')[9:20]\n",
                "sed -n '10,20p' log.txt > slice.txt"))
    T.append(_t("ErrorsByComponent", "`app.log` lines look like `DATE LEVEL [component] message`. Count the ERROR lines per "
                "component and write `component count` lines to `errors.txt`, most errors first, ties by name.",
                {"app.log": _LOG},
                "def test_errors():\n    import collections\n    c = collections.Counter(l.split()[2].strip('[]') for l in original_lines('app.log') if l.split()[1] == 'ERROR')\n"
                "    want = [f'{k} {v}' for k, v in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))]\n"
                "    assert [' '.join(l.split()) for l in lines('errors.txt')] == want\n",
                "awk '$2==\"ERROR\"{gsub(/[][]/,\"\",$3); c[$3]++} END{for(k in c) print k, c[k]}' app.log | sort -k2,2nr -k1,1 > errors.txt",
                difficulty="medium"))
    T.append(_t("RenameExtensions", "Rename every `.txt` file directly inside `docs/` to the same name with `.md`. "
                "Contents must not change; other files stay as they are.",
                {"docs/intro.txt": "intro\n", "docs/guide.txt": "guide\n", "docs/keep.rst": "rst\n", "docs/my notes.txt": "n\n"},
                "def test_renamed():\n    assert listdir('docs') == ['guide.md', 'intro.md', 'keep.rst', 'my notes.md']\n"
                "    for name in ('guide', 'intro', 'my notes'):\n        assert read(f'docs/{name}.md') == original(f'docs/{name}.txt'), name\n",
                "cd docs && for f in *.txt; do mv -- \"$f\" \"${f%.txt}.md\"; done", mutable=('docs/*.txt',)))
    T.append(_t("DeleteTmpFiles", "Delete every file ending in `.tmp` anywhere under `project/`. Keep everything else.",
                {"project/a.tmp": "scratch\n", "project/src/b.tmp": "partial build\n", "project/src/main.c": "int main(){}\n",
                 "project/src/deep/c.tmp": "x", "project/notes.tmp.txt": "keep\n", "project/src/__init__.py": "",
                 "project/logs/.keep": ""},
                "def test_deleted():\n    r = sh('find project -type f | sort')\n"
                "    assert r.stdout.split() == ['project/logs/.keep', 'project/notes.tmp.txt', 'project/src/__init__.py', 'project/src/main.c']\n",
                "find project -type f -name '*.tmp' -delete", mutable=('project/*.tmp',)))
    T.append(_t("TopWords", "Write the 5 most frequent words of `text.txt` to `top.txt` as `word count` lines, most "
                "frequent first (ties alphabetical). Words are runs of letters, compared in lower case.",
                {"text.txt": _lines(6, 60, lambda r, i: " ".join(r.choice(_WORDS[:8]).capitalize() if r.random() < .2 else r.choice(_WORDS[:8]) for _ in range(7)) + ".")},
                "def test_top():\n    import re, collections\n    c = collections.Counter(re.findall('[a-z]+', original('text.txt').lower()))\n"
                "    want = [f'{w} {n}' for w, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:5]]\n"
                "    assert [' '.join(l.split()) for l in lines('top.txt')] == want\n",
                "tr 'A-Z' 'a-z' < text.txt | grep -oE '[a-z]+' | sort | uniq -c | sort -k1,1nr -k2,2 | head -5 | awk '{print $2, $1}' > top.txt",
                difficulty="medium"))
    T.append(_t("ColumnSum", "`numbers.tsv` is tab-separated with a header line. Write the sum of the third column to "
                "`sum.txt` (an integer).",
                {"numbers.tsv": "a\tb\tc\n" + _lines(8, 50, lambda r, i: f"{i}\tx{i}\t{r.randint(-50, 300)}")},
                "def test_sum():\n    want = sum(int(l.split('\\t')[2]) for l in original_lines('numbers.tsv')[1:])\n"
                "    assert read('sum.txt').strip() == str(want)\n",
                "awk -F'\\t' 'NR>1{s+=$3} END{print s}' numbers.tsv > sum.txt"))
    T.append(_t("ReverseLines", "Write the lines of `poem.txt` in reverse order to `reversed.txt`.",
                {"poem.txt": "roses are red\nviolets are blue\nshells are fast\nand so are you\n"},
                "def test_reversed():\n    assert lines('reversed.txt') == original_lines('poem.txt')[::-1]\n",
                "tac poem.txt > reversed.txt"))
    T.append(_t("CrlfToLf", "`report.csv` has Windows line endings (CRLF). Convert it in place to Unix line endings. "
                "Leave the other files as they are.",
                {"report.csv": "id,value\r\n1,10\r\n2,20\r\n3,30\r\n", "old_report.csv": "id,value\r\n1,9\r\n",
                 "tools/run.bat": "@echo off\r\necho run\r\n"},
                "def test_lf():\n    assert read_bytes('report.csv') == b'id,value\\n1,10\\n2,20\\n3,30\\n'\n",
                "sed -i 's/\\r$//' report.csv", mutable=('report.csv',)))
    T.append(_t("TrimTrailingSpace", "Remove trailing spaces and tabs from every line of every `.py` file under `src/`. "
                "Nothing else may change.",
                {"src/a.py": "x = 1   \ny = 2\t\n", "src/pkg/b.py": "def f():  \n    return 3 \n", "src/c.txt": "keep   \n"},
                "def test_trimmed():\n    assert read('src/a.py') == 'x = 1\\ny = 2\\n'\n    assert read('src/pkg/b.py') == 'def f():\\n    return 3\\n'\n"
                "    assert read('src/c.txt') == 'keep   \\n'\n",
                "find src -name '*.py' -exec sed -i 's/[ \\t]*$//' {} +", mutable=('src/*.py',)))
    # ------------------------------------------------------------ archives
    site = {"site/index.html": "<h1>hi</h1>\n", "site/css/main.css": "body{}\n", "site/js/app.js": "console.log(1)\n"}
    T.append(_t("ExtractArchive", "Extract `bundle.tar.gz` into a new directory `out/` (so that `out/` holds what the "
                "archive holds, and nothing else).",
                {"bundle.tar.gz": _tar_gz({"data/a.txt": "A\n", "data/sub/b.txt": "B\n", "readme.md": "# r\n"}),
                 "old/bundle-v1.tar.gz": _tar_gz({"data/a.txt": "old A\n", "stale.txt": "stale\n"})},
                "def test_extracted():\n    assert read('out/data/a.txt') == 'A\\n' and read('out/data/sub/b.txt') == 'B\\n'\n"
                "    assert read('out/readme.md') == '# r\\n'\n"
                "    assert sh('cd out && find . -type f | sort').stdout.split() == ['./data/a.txt', './data/sub/b.txt', './readme.md']\n",
                "mkdir -p out && tar -xzf bundle.tar.gz -C out", category="archives"))
    T.append(_t("CreateArchive", "Create a gzip-compressed tar archive `backup.tar.gz` of the directory `site/` (and "
                "nothing else), with paths inside the archive starting with `site/`.",
                dict(site, **{"notes.txt": "not part of the site\n", "drafts/page.html": "<p>draft</p>\n"}),
                "def test_archive():\n    r = sh('mkdir -p .chk && tar -xzf backup.tar.gz -C .chk && cd .chk && find . -type f | sort')\n"
                "    assert r.returncode == 0, r.stderr\n    assert r.stdout.split() == ['./site/css/main.css', './site/index.html', './site/js/app.js']\n"
                "    assert read('.chk/site/js/app.js') == original('site/js/app.js')\n",
                "tar -czf backup.tar.gz site", category="archives"))
    T.append(_t("GzipLogs", "Compress every `.log` file in `logs/` with gzip, so each `X.log` becomes `X.log.gz` and "
                "the uncompressed file is gone.",
                {"logs/app.log": _LOG, "logs/db.log": "db ok\n", "logs/readme.txt": "not a log\n"},
                "def test_gz():\n    assert listdir('logs') == ['app.log.gz', 'db.log.gz', 'readme.txt']\n"
                "    r = sh('gzip -dc logs/db.log.gz')\n    assert r.stdout == 'db ok\\n'\n    assert sh('gzip -dc logs/app.log.gz').stdout == original('logs/app.log')\n",
                "gzip logs/*.log", category="archives", mutable=('logs/*.log',)))
    T.append(_t("ArchiveConfigs", "Create an uncompressed tar archive `confs.tar` holding only the `.conf` files under "
                "`etc/` (at any depth), with their paths as they are (starting with `etc/`).",
                {"etc/a.conf": "a=1\n", "etc/x/b.conf": "b=2\n", "etc/x/notes.txt": "n\n", "etc/y/z/c.conf": "c=3\n", "etc/y/d.conf.bak": "old\n"},
                "def test_confs():\n    r = sh('tar -tf confs.tar | grep -v /$ | sort')\n"
                "    assert r.stdout.split() == ['etc/a.conf', 'etc/x/b.conf', 'etc/y/z/c.conf']\n",
                "find etc -name '*.conf' -type f | tar -cf confs.tar -T -", category="archives"))
    # ------------------------------------------------------------ permissions
    T.append(_t("MakeExecutable", "Make every `.sh` script in `bin/` executable by its owner, then run `bin/build.sh` "
                "(it writes `build.out`).",
                {"bin/build.sh": "#!/bin/bash\necho built > build.out\n", "bin/clean.sh": "#!/bin/bash\nrm -f build.out\n", "bin/lib.txt": "x\n"},
                "def test_exec():\n    assert mode('bin/build.sh') & 0o100 and mode('bin/clean.sh') & 0o100\n"
                "    assert not mode('bin/lib.txt') & 0o111\n    assert read('build.out') == 'built\\n'\n"
                "    assert read('bin/build.sh') == original('bin/build.sh') and read('bin/clean.sh') == original('bin/clean.sh')\n",
                "chmod u+x bin/*.sh && bin/build.sh", category="permissions", mutable=('bin/*.sh',)))
    T.append(_t("PrivateKey", "Lock down `keys/`: the directory must have mode 700 and `keys/secret.key` mode 600 "
                "(exactly these modes).",
                {"keys/secret.key": ("-----KEY-----\n", 0o644), "keys/public.pem": ("pub\n", 0o644)},
                "def test_modes():\n    assert mode('keys') == 0o700, oct(mode('keys'))\n    assert mode('keys/secret.key') == 0o600\n"
                "    assert read('keys/secret.key') == original('keys/secret.key')\n",
                "chmod 700 keys && chmod 600 keys/secret.key", category="permissions", mutable=('keys/secret.key',)))
    T.append(_t("ReadOnlyDocs", "Make every file under `docs/` read-only for everyone (no write permission for owner, "
                "group or others) while keeping them readable by everyone. Files outside `docs/` keep their modes.",
                {"docs/a.md": ("a\n", 0o664), "docs/b/c.md": ("c\n", 0o600), "docs/b/d.md": ("d\n", 0o666),
                 "notes.md": ("n\n", 0o644), "drafts/todo.md": ("t\n", 0o664)},
                "def test_ro():\n    for p in ('docs/a.md', 'docs/b/c.md', 'docs/b/d.md'):\n"
                "        m = mode(p)\n        assert m & 0o222 == 0 and m & 0o444 == 0o444, (p, oct(m))\n        assert read(p) == original(p), p\n",
                "find docs -type f -exec chmod a-w,a+r {} +", category="permissions", mutable=('docs/',)))
    # ------------------------------------------------------------ scripts
    T.append(_t("FixBackupScript", "`backup.sh SRC DEST` should copy every file of directory SRC into directory DEST "
                "(creating DEST), but it is broken, especially for names with spaces. Fix it.",
                {"backup.sh": ("#!/bin/bash\nsrc=$1\ndest=$2\nmkdir $dest\nfor f in $(ls $src); do\n  cp $scr/$f $dest/\ndone\n", 0o755),
                 "my data/one file.txt": "1\n", "my data/two.txt": "2\n"},
                "def test_spaces():\n    r = sh('./backup.sh \"my data\" \"back up\"')\n    assert r.returncode == 0, r.stderr\n"
                "    assert listdir('back up') == ['one file.txt', 'two.txt']\n\n"
                "def test_fresh_input():\n    r = sh('mkdir -p \"x y\" && echo 3 > \"x y/a b c\" && ./backup.sh \"x y\" out/nested')\n"
                "    assert r.returncode == 0, r.stderr\n    assert read('out/nested/a b c') == '3\\n'\n",
                "cat > backup.sh <<'EOF'\n#!/bin/bash\nset -e\nsrc=$1\ndest=$2\nmkdir -p -- \"$dest\"\nfor f in \"$src\"/*; do\n  cp -- \"$f\" \"$dest\"/\ndone\nEOF\nchmod +x backup.sh",
                difficulty="medium", category="scripts", mutable=('backup.sh',)))
    T.append(_t("FixPythonTool", "`./add.py 3 4` should print `7`, but running it fails. Make `./add.py A B` print the "
                "sum of two integers.",
                {"add.py": ("#!/usr/bin/pyhton3\r\nimport sys\r\nprint(int(sys.argv[1]) + sys.argv[2])\r\n", 0o644)},
                "def test_add():\n    r = sh('./add.py 3 4')\n    assert r.stdout.strip() == '7', r.stderr\n"
                "    assert sh('./add.py -10 25').stdout.strip() == '15'\n",
                "printf '#!/usr/bin/env python3\\nimport sys\\nprint(int(sys.argv[1]) + int(sys.argv[2]))\\n' > add.py && chmod +x add.py",
                difficulty="medium", category="scripts", mutable=('add.py',)))
    T.append(_t("GreetScript", "Write an executable `greet.sh`: `./greet.sh NAME` prints `Hello, NAME!`; with no "
                "argument it prints `usage: greet.sh NAME` to stderr and exits with status 1.",
                {},
                "def test_greet():\n    assert sh('./greet.sh World').stdout == 'Hello, World!\\n'\n"
                "    assert sh('./greet.sh \"Ada L\"').stdout == 'Hello, Ada L!\\n'\n\n"
                "def test_usage():\n    r = sh('./greet.sh')\n    assert r.returncode == 1 and 'usage: greet.sh NAME' in r.stderr and r.stdout == ''\n"
                "    r = sh('./greet.sh Bo')\n    assert r.returncode == 0 and r.stderr == '' and r.stdout == 'Hello, Bo!\\n'\n",
                "cat > greet.sh <<'EOF'\n#!/bin/bash\nif [ $# -lt 1 ]; then echo 'usage: greet.sh NAME' >&2; exit 1; fi\necho \"Hello, $1!\"\nEOF\nchmod +x greet.sh",
                category="scripts"))
    T.append(_t("PrimeCheck", "Write an executable `isprime.sh N` that exits with status 0 when the integer N >= 0 is "
                "prime and 1 otherwise (it prints nothing).",
                {},
                "def test_small():\n    for n, prime in ((0, False), (1, False), (2, True), (3, True), (4, False), (13, True)):\n"
                "        assert sh(f'./isprime.sh {n}').returncode == (0 if prime else 1), n\n\n"
                "def test_large():\n    for n, prime in ((91, False), (97, True), (7917, False), (7919, True)):\n"
                "        assert sh(f'./isprime.sh {n}').returncode == (0 if prime else 1), n\n",
                "cat > isprime.sh <<'EOF'\n#!/bin/bash\nn=$1\n[ \"$n\" -lt 2 ] && exit 1\nfor ((i=2; i*i<=n; i++)); do (( n % i == 0 )) && exit 1; done\nexit 0\nEOF\nchmod +x isprime.sh",
                category="scripts"))
    T.append(_t("EnvDefault", "Write an executable `mode.sh` that prints the value of the environment variable "
                "`APP_MODE`, or `default` when it is unset or empty.",
                {},
                "def test_set():\n    assert sh('./mode.sh', env={'APP_MODE': 'prod'}).stdout == 'prod\\n'\n"
                "    assert sh('./mode.sh', env={'APP_MODE': 'stage two'}).stdout == 'stage two\\n'\n\n"
                "def test_unset():\n    assert sh('./mode.sh').stdout == 'default\\n'\n    assert sh('./mode.sh', env={'APP_MODE': ''}).stdout == 'default\\n'\n"
                "    assert sh('./mode.sh', env={'APP_MODE': 'dev'}).stdout == 'dev\\n'\n",
                "printf '#!/bin/bash\\necho \"${APP_MODE:-default}\"\\n' > mode.sh && chmod +x mode.sh",
                category="scripts"))
    T.append(_t("TimeoutWrapper", "Write an executable `limit.sh CMD...` that runs the command with its arguments and "
                "prints `TIMEOUT` (exit status 124) if it runs longer than 1 second; otherwise it passes the "
                "command's output and exit status through.",
                {},
                "def test_output():\n    r = sh('./limit.sh echo hi there')\n    assert r.stdout == 'hi there\\n' and r.returncode == 0\n"
                "    r = sh('./limit.sh sleep 5', timeout=4)\n    assert r.returncode == 124 and 'TIMEOUT' in r.stdout\n\n"
                "def test_status():\n    assert sh('./limit.sh false').returncode == 1\n"
                "    r = sh('./limit.sh bash -c \"sleep 5; exit 3\"', timeout=4)\n    assert r.returncode == 124 and r.stdout.strip() == 'TIMEOUT'\n",
                "cat > limit.sh <<'EOF'\n#!/bin/bash\ntimeout 1 \"$@\"\ns=$?\n[ $s -eq 124 ] && echo TIMEOUT\nexit $s\nEOF\nchmod +x limit.sh",
                difficulty="medium", category="scripts"))
    # ------------------------------------------------------------ CSV / JSON
    T.append(_t("CsvAdults", "From `people.csv` (header `name,age,city`), write `adults.csv` with the header and only "
                "the rows whose age is 18 or more, in the original order.",
                {"people.csv": _PEOPLE},
                "def test_adults():\n    rows = original_lines('people.csv')\n    want = [rows[0]] + [r for r in rows[1:] if int(r.split(',')[1]) >= 18]\n"
                "    assert lines('adults.csv') == want\n",
                "awk -F, 'NR==1 || $2>=18' people.csv > adults.csv", category="data"))
    T.append(_t("CsvToJson", "Convert `items.csv` (header `sku,name,price,qty`) to `items.json`: a JSON array of objects "
                "with those keys, `price` as a number and `qty` as an integer, in file order.",
                {"items.csv": "sku,name,price,qty\nA1,bolt,0.25,100\nB2,nut,0.1,250\nC3,washer large,1.5,7\n"},
                "def test_json():\n    data = json.loads(read('items.json'))\n"
                "    assert data == [{'sku': 'A1', 'name': 'bolt', 'price': 0.25, 'qty': 100}, {'sku': 'B2', 'name': 'nut', 'price': 0.1, 'qty': 250},"
                " {'sku': 'C3', 'name': 'washer large', 'price': 1.5, 'qty': 7}]\n    assert isinstance(data[0]['qty'], int)\n",
                "python3 -c \"import csv,json; rows=[dict(r, price=float(r['price']), qty=int(r['qty'])) for r in csv.DictReader(open('items.csv'))]; json.dump(rows, open('items.json','w'))\"",
                category="data"))
    T.append(_t("ActiveUsers", "`users.json` holds `{\"users\": [{\"name\", \"active\", \"age\"}, ...]}`. Write the names "
                "of the active users, sorted, one per line, to `active.txt`.",
                {"users.json": _USERS},
                "def test_active():\n    want = sorted(u['name'] for u in json.loads(original('users.json'))['users'] if u['active'])\n"
                "    assert lines('active.txt') == want\n",
                "python3 -c \"import json; print('\\n'.join(sorted(u['name'] for u in json.load(open('users.json'))['users'] if u['active'])))\" > active.txt",
                category="data"))
    T.append(_t("OrderTotals", "`orders.json` is a list of orders `{id, customer, amount}`. Write `totals.csv` with the "
                "header `customer,total` and one row per customer (sorted by name) with the sum of their amounts "
                "rounded to 2 decimals (written like `12.30`).",
                {"orders.json": _ORDERS},
                "def test_totals():\n    import collections\n    c = collections.defaultdict(float)\n"
                "    for o in json.loads(original('orders.json')):\n        c[o['customer']] += o['amount']\n"
                "    want = ['customer,total'] + [f'{k},{v:.2f}' for k, v in sorted(c.items())]\n    assert lines('totals.csv') == want\n",
                "python3 - <<'EOF'\nimport json, collections\nc = collections.defaultdict(float)\nfor o in json.load(open('orders.json')):\n    c[o['customer']] += o['amount']\n"
                "with open('totals.csv', 'w') as f:\n    f.write('customer,total\\n')\n    for k in sorted(c):\n        f.write(f'{k},{c[k]:.2f}\\n')\nEOF",
                difficulty="medium", category="data"))
    T.append(_t("CsvJoin", "Join `names.csv` (`id,name`) and `scores.csv` (`id,score`) on `id` into `joined.csv` with "
                "header `id,name,score`, only ids present in both, sorted by id numerically.",
                {"names.csv": "id,name\n3,cy\n1,ada\n10,jo\n2,bob\n", "scores.csv": "id,score\n10,77\n2,88\n1,95\n4,60\n"},
                "def test_join():\n    assert lines('joined.csv') == ['id,name,score', '1,ada,95', '2,bob,88', '10,jo,77']\n",
                "{ echo id,name,score; join -t, <(tail -n +2 names.csv | sort -t, -k1,1) <(tail -n +2 scores.csv | sort -t, -k1,1) | sort -t, -k1,1n; } > joined.csv",
                difficulty="medium", category="data"))
    T.append(_t("CsvDedupe", "`events.csv` has duplicate rows. Remove every repeated row (keep its first occurrence), "
                "keeping the order, and write the result to `events_clean.csv`.",
                {"events.csv": "ts,event\n1,start\n2,click\n1,start\n3,stop\n2,click\n4,click\n"},
                "def test_dedupe():\n    assert lines('events_clean.csv') == ['ts,event', '1,start', '2,click', '3,stop', '4,click']\n",
                "awk '!seen[$0]++' events.csv > events_clean.csv", category="data"))
    T.append(_t("StatusCounts", "`access.log` is a web server log; the second-to-last field of each line is the HTTP "
                "status. Write `status.csv` with header `status,count` and one row per status, sorted by status.",
                {"access.log": _ACCESS},
                "def test_status():\n    import collections\n    c = collections.Counter(l.split()[-2] for l in original_lines('access.log'))\n"
                "    assert lines('status.csv') == ['status,count'] + [f'{k},{v}' for k, v in sorted(c.items())]\n",
                "{ echo status,count; awk '{print $(NF-1)}' access.log | sort | uniq -c | awk '{print $2\",\"$1}'; } > status.csv",
                category="data"))
    T.append(_t("JsonConfigEdit", "Edit `config.json`: set `debug` to false, set `server.port` to 8080 and add a "
                "top-level key `version` with the string value `2.0`. Keep every other key and value.",
                {"config.json": json.dumps({"debug": True, "name": "svc", "server": {"host": "0.0.0.0", "port": 80}, "tags": ["a", "b"]}, indent=2)},
                "def test_config():\n    assert json.loads(read('config.json')) == {'debug': False, 'name': 'svc', 'server': {'host': '0.0.0.0', 'port': 8080}, 'tags': ['a', 'b'], 'version': '2.0'}\n",
                "python3 - <<'EOF'\nimport json\nc = json.load(open('config.json'))\nc['debug'] = False\nc['server']['port'] = 8080\nc['version'] = '2.0'\njson.dump(c, open('config.json', 'w'), indent=2)\nEOF",
                category="data", mutable=('config.json',)))
    T.append(_t("SortScores", "Sort `scores.csv` (header `name,score`) by score descending, then name ascending, and "
                "write it (with the header) to `ranked.csv`.",
                {"scores.csv": "name,score\n" + _lines(9, 25, lambda r, i: f"{_NAMES[i % 20]}{i // 20},{r.randint(50, 60)}")},
                "def test_sorted():\n    rows = [l.split(',') for l in original_lines('scores.csv')[1:]]\n"
                "    want = ['name,score'] + [f'{n},{s}' for n, s in sorted(rows, key=lambda x: (-int(x[1]), x[0]))]\n"
                "    assert lines('ranked.csv') == want\n",
                "{ head -1 scores.csv; tail -n +2 scores.csv | sort -t, -k2,2nr -k1,1; } > ranked.csv", category="data"))
    # ------------------------------------------------------------ small programs
    T.append(_t("FizzBuzz", "Write `fizzbuzz.py` so that `python3 fizzbuzz.py N` prints the numbers 1..N, one per "
                "line, with multiples of 3 replaced by `Fizz`, of 5 by `Buzz` and of both by `FizzBuzz`.",
                {},
                "def test_fb():\n    want = ['FizzBuzz' if i % 15 == 0 else 'Fizz' if i % 3 == 0 else 'Buzz' if i % 5 == 0 else str(i) for i in range(1, 101)]\n"
                "    assert sh('python3 fizzbuzz.py 100').stdout.split() == want\n    assert sh('python3 fizzbuzz.py 2').stdout.split() == ['1', '2']\n",
                "cat > fizzbuzz.py <<'EOF'\nimport sys\nfor i in range(1, int(sys.argv[1]) + 1):\n    print('FizzBuzz' if i % 15 == 0 else 'Fizz' if i % 3 == 0 else 'Buzz' if i % 5 == 0 else i)\nEOF",
                category="programs"))
    T.append(_t("WordCounter", "Write `counter.py`: it reads text on stdin and prints `LINES WORDS CHARS` (three "
                "integers separated by single spaces), as `wc` counts them (chars = characters of the text).",
                {},
                "def test_counts():\n    for text in ('hello world\\n', 'a b  c\\n\\nd\\n', 'no newline', 'ünï cödé\\n'):\n"
                "        want = f\"{text.count(chr(10))} {len(text.split())} {len(text)}\"\n"
                "        assert sh('python3 counter.py', input=text).stdout.strip() == want, text\n",
                "cat > counter.py <<'EOF'\nimport sys\nt = sys.stdin.read()\nprint(t.count('\\n'), len(t.split()), len(t))\nEOF",
                category="programs"))
    T.append(_t("FixMedian", "`stats.py` prints the mean and median of the numbers given as arguments "
                "(`python3 stats.py 1 2 3 4` should print `mean=2.5 median=2.5`), but its median is wrong. Fix it.",
                {"stats.py": "import sys\nxs = [float(a) for a in sys.argv[1:]]\nmean = sum(xs) / len(xs)\n"
                 "median = xs[len(xs) // 2]\nprint(f'mean={mean:g} median={median:g}')\n"},
                "def test_even():\n    assert sh('python3 stats.py 4 1 3 2').stdout.strip() == 'mean=2.5 median=2.5'\n"
                "    assert sh('python3 stats.py 30 2 8 4 6 10').stdout.strip() == 'mean=10 median=7'\n\n"
                "def test_odd():\n    assert sh('python3 stats.py 9 1 5').stdout.strip() == 'mean=5 median=5'\n"
                "    assert sh('python3 stats.py 7 100 3 4 1').stdout.strip() == 'mean=23 median=4'\n",
                "sed -i 's|^median = .*|s = sorted(xs)\\nmedian = s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2|' stats.py",
                difficulty="medium", category="programs", mutable=('stats.py',)))
    T.append(_t("RpnCalculator", "Write `rpn.py`: for each line of stdin (a Reverse Polish expression of integers and "
                "`+ - * /`, tokens separated by spaces), print its value. `/` is integer division truncating "
                "toward zero. Example: `3 4 + 2 *` prints `14`.",
                {},
                "def test_rpn():\n    r = sh('python3 rpn.py', input='3 4 + 2 *\\n5 1 2 + 4 * + 3 -\\n7 -2 /\\n42\\n')\n"
                "    assert r.stdout.split() == ['14', '14', '-3', '42'], r.stdout + r.stderr\n",
                "cat > rpn.py <<'EOF'\nimport sys\nfor line in sys.stdin:\n    st = []\n    for t in line.split():\n        if t in '+-*/' and len(t) == 1:\n"
                "            b, a = st.pop(), st.pop()\n            st.append(a + b if t == '+' else a - b if t == '-' else a * b if t == '*' else int(a / b))\n"
                "        else:\n            st.append(int(t))\n    if st:\n        print(st[-1])\nEOF",
                difficulty="hard", category="programs"))
    T.append(_t("FindDuplicates", "Some files under `photos/` have identical contents. Write `dupes.txt`: one line per "
                "group of identical files (2 or more), the paths (relative to the workspace) sorted and separated "
                "by single spaces; lines sorted.",
                {"photos/a.jpg": "AAA", "photos/b.jpg": "BBB", "photos/2023/a_copy.jpg": "AAA", "photos/2023/c.jpg": "CCC",
                 "photos/x/y/b2.jpg": "BBB", "photos/x/a3.jpg": "AAA", "photos/z.jpg": "ZZZ"},
                "def test_dupes():\n    assert lines('dupes.txt') == ['photos/2023/a_copy.jpg photos/a.jpg photos/x/a3.jpg', 'photos/b.jpg photos/x/y/b2.jpg']\n",
                "python3 - <<'EOF'\nimport os, hashlib, collections\ng = collections.defaultdict(list)\nfor d, _, fs in os.walk('photos'):\n    for f in fs:\n"
                "        p = os.path.join(d, f)\n        g[hashlib.sha256(open(p, 'rb').read()).hexdigest()].append(p)\n"
                "out = sorted(' '.join(sorted(v)) for v in g.values() if len(v) > 1)\nopen('dupes.txt', 'w').write(''.join(l + '\\n' for l in out))\nEOF",
                difficulty="medium", category="files"))
    T.append(_t("RotateLogs", "Write an executable `rotate.sh` that rotates `app.log` the classic way: `app.log.2` "
                "becomes `app.log.3`, `.1` becomes `.2`, `app.log` becomes `app.log.1`, and a new empty `app.log` is "
                "created. At most 3 old logs are kept (the oldest is dropped). Missing files are fine.",
                {"app.log": "first\n"},
                "def test_rotate():\n    r = sh('for i in 2 3 4 5; do ./rotate.sh || exit 1; echo gen$i > app.log; done')\n    assert r.returncode == 0, r.stderr\n"
                "    assert read('app.log') == 'gen5\\n' and read('app.log.1') == 'gen4\\n'\n"
                "    assert read('app.log.2') == 'gen3\\n' and read('app.log.3') == 'gen2\\n'\n    assert not exists('app.log.4')\n\n"
                "def test_new_empty():\n    r = sh('./rotate.sh')\n    assert r.returncode == 0 and read('app.log') == '' and read('app.log.1') == 'first\\n'\n",
                "cat > rotate.sh <<'EOF'\n#!/bin/bash\nrm -f app.log.3\nfor i in 2 1; do [ -e app.log.$i ] && mv app.log.$i app.log.$((i+1)); done\n"
                "[ -e app.log ] && mv app.log app.log.1\n: > app.log\nexit 0\nEOF\nchmod +x rotate.sh",
                difficulty="hard", category="scripts"))
    T.append(_t("DirDiff", "Compare the trees `old/` and `new/`. Write `report.txt` with one line per difference, "
                "sorted: `ADDED path`, `REMOVED path` or `CHANGED path` (paths relative to the tree roots).",
                {"old/a.txt": "1", "old/b.txt": "2", "old/sub/c.txt": "3", "old/sub/d.txt": "4",
                 "new/a.txt": "1", "new/b.txt": "2!", "new/sub/c.txt": "3", "new/sub/e.txt": "5", "new/f.txt": "6"},
                "def test_report():\n    assert lines('report.txt') == ['ADDED f.txt', 'ADDED sub/e.txt', 'CHANGED b.txt', 'REMOVED sub/d.txt']\n",
                "python3 - <<'EOF'\nimport os\ndef files(r):\n    return {os.path.relpath(os.path.join(d, f), r) for d, _, fs in os.walk(r) for f in fs}\n"
                "o, n = files('old'), files('new')\nout = [f'ADDED {p}' for p in n - o] + [f'REMOVED {p}' for p in o - n]\n"
                "out += [f'CHANGED {p}' for p in o & n if open('old/' + p, 'rb').read() != open('new/' + p, 'rb').read()]\n"
                "open('report.txt', 'w').write(''.join(l + '\\n' for l in sorted(out)))\nEOF",
                difficulty="hard", category="files"))
    T.append(_t("BuildOrder", "`deps.txt` lists build dependencies, one `target: dep1 dep2 ...` per line (a target "
                "may have none). Write to `order.txt` an order in which every dependency comes before the targets "
                "needing it: one name per line, every name (targets and deps) exactly once; when several are "
                "ready, take the alphabetically smallest first.",
                {"deps.txt": "app: lib utils\nlib: core\nutils: core log\ntests: app\nlog:\ndocs:\n"},
                "def test_order():\n    assert lines('order.txt') == ['core', 'docs', 'lib', 'log', 'utils', 'app', 'tests']\n",
                "python3 - <<'EOF'\nimport heapq\ndeps = {}\nfor line in open('deps.txt'):\n    if ':' in line:\n        t, ds = line.split(':', 1)\n"
                "        deps.setdefault(t.strip(), set()).update(ds.split())\n        for d in ds.split():\n            deps.setdefault(d, set())\n"
                "ready = [n for n in deps if not deps[n]]\nheapq.heapify(ready)\nout = []\nwhile ready:\n    n = heapq.heappop(ready)\n    out.append(n)\n"
                "    for t in deps:\n        if n in deps[t]:\n            deps[t].discard(n)\n            if not deps[t]:\n                heapq.heappush(ready, t)\n"
                "open('order.txt', 'w').write(''.join(x + '\\n' for x in out))\nEOF",
                difficulty="hard", category="programs"))
    T.append(_t("SplitByColumn", "Split `sales.csv` (header `region,item,amount`) into one file per region in a new "
                "directory `by_region/`: `by_region/REGION.csv`, each with the header and that region's rows in the "
                "original order.",
                {"sales.csv": "region,item,amount\n" + _lines(12, 20, lambda r, i: f"{r.choice(['north', 'south', 'east'])},item{i},{r.randint(1, 99)}")},
                "def test_split():\n    rows = original_lines('sales.csv')\n    regions = sorted({r.split(',')[0] for r in rows[1:]})\n"
                "    assert listdir('by_region') == [f'{g}.csv' for g in regions]\n    for g in regions:\n"
                "        assert lines(f'by_region/{g}.csv') == [rows[0]] + [r for r in rows[1:] if r.split(',')[0] == g]\n",
                "mkdir -p by_region && awk -F, 'NR==1{h=$0; next} {f=\"by_region/\"$1\".csv\"; if(!(f in s)){print h > f; s[f]=1} print >> f}' sales.csv",
                difficulty="medium", category="data"))
    names = [t.name for t in T]
    if len(set(names)) != len(names):
        raise RuntimeError("duplicate bundled terminal task names")
    return T


def task_names() -> list[str]:
    return [t.name for t in bundled_tasks()]
