"""GEM's own repository tasks: small Python packages, each with an injected bug and an issue.

Each repository has a package module with the bug and a visible test file whose tests pass (they
become PASS_TO_PASS). The hidden version of that test file adds the tests that expose the bug
(FAIL_TO_PASS), as a SWE-bench ``test_patch`` does. The reference fix is one exact replacement.

Tests are written as ``assert`` statements (or ``check(expr, expected)``) and compiled by
:func:`gem.envs.swe.checks.compile_tests`: the agent sees them as plain asserts; at grading the test
process only reports what each checked expression returned or raised, and GEM's process compares
that with the expected values, which never reach the sandbox.
"""

from __future__ import annotations

import ast
from functools import lru_cache

from gem.envs.swe.checks import compile_tests
from gem.envs.swe.task import SweTask, unified_diff


def _test_names(source: str) -> list[str]:
    return [n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]


def _swe(name: str, pkg: str, mod: str, issue: str, source: str, fix: tuple, existing: str, new: str,
         difficulty: str = "easy") -> SweTask:
    old, replacement = fix
    if source.count(old) != 1:
        raise ValueError(f"{name}: the fix's old text must occur once in the source")
    fixed = source.replace(old, replacement)
    header = f"from {pkg}.{mod} import *  # noqa: F403\n\n\n"
    test_path = f"tests/test_{mod}.py"
    module_path = f"{pkg}/{mod}.py"
    visible, _, _ = compile_tests(existing)
    _, observing, expected = compile_tests(existing + "\n\n" + new)
    return SweTask(
        name=name,
        instruction=issue,
        files={f"{pkg}/__init__.py": f'"""{pkg}."""\n', module_path: source, test_path: header + visible,
               "tests/__init__.py": "", "README.md": f"# {pkg}\n\nRun the tests with `python3 -m pytest tests` "
               f"or `python3 -c 'import tests.test_{mod} as t; ...'`.\n"},
        hidden_files={test_path: header + observing},
        fail_to_pass=tuple(f"{test_path}::{n}" for n in _test_names(new)),
        pass_to_pass=tuple(f"{test_path}::{n}" for n in _test_names(existing)),
        patch=unified_diff(module_path, source, fixed),
        edits=((module_path, old, replacement),),
        difficulty=difficulty,
        expected={f"{test_path}::{n}": v for n, v in expected.items()},
    )


@lru_cache(maxsize=1)
def bundled_tasks() -> list[SweTask]:
    """All bundled repository tasks, in a fixed order."""
    T = [
        _swe("Slugify", "textkit", "slug",
             "`slugify('Hello,  World!')` returns `hello--world` but should return `hello-world`: runs of "
             "separators must become a single dash, and the result must not start or end with a dash.",
             "import re\n\n\ndef slugify(text):\n    text = text.lower()\n    text = re.sub(r'[^a-z0-9]', '-', text)\n"
             "    return text.strip('-')\n",
             ("re.sub(r'[^a-z0-9]', '-', text)", "re.sub(r'[^a-z0-9]+', '-', text)"),
             "def test_simple():\n    assert slugify('Hello') == 'hello'\n\n\ndef test_strip():\n    assert slugify('-a-') == 'a'\n",
             "def test_collapse():\n    assert slugify('Hello,  World!') == 'hello-world'\n    assert slugify('  a -- b  ') == 'a-b'\n"),
        _swe("Median", "statkit", "center",
             "`median([1, 2, 3, 4])` returns 3; for an even number of values it must return the mean of the two "
             "middle values (2.5). Unsorted input must work too.",
             "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef median(xs):\n    s = sorted(xs)\n    return s[len(s) // 2]\n",
             ("    return s[len(s) // 2]\n", "    n = len(s)\n    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2\n"),
             "def test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\ndef test_odd():\n    assert median([3, 1, 2]) == 2\n",
             "def test_even():\n    assert median([4, 1, 3, 2]) == 2.5\n    assert median([1, 1, 2, 10]) == 1.5\n"),
        _swe("LeapYear", "calendarx", "leap",
             "`is_leap(1900)` returns True, but 1900 was not a leap year: years divisible by 100 are leap years "
             "only when they are also divisible by 400.",
             "def is_leap(year):\n    return year % 4 == 0\n\n\ndef days_in_year(year):\n    return 366 if is_leap(year) else 365\n",
             ("    return year % 4 == 0\n", "    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n"),
             "def test_plain():\n    assert is_leap(2024) and not is_leap(2023)\n\n\ndef test_days():\n    assert days_in_year(2023) == 365\n",
             "def test_century():\n    assert not is_leap(1900) and not is_leap(2100)\n    assert is_leap(2000)\n    assert days_in_year(1900) == 365\n"),
        _swe("StackPop", "structs", "stack",
             "Popping an empty `Stack` silently returns None. It should raise `IndexError('pop from empty stack')`.",
             "class Stack:\n    def __init__(self):\n        self._items = []\n\n    def push(self, x):\n        self._items.append(x)\n\n"
             "    def pop(self):\n        if not self._items:\n            return None\n        return self._items.pop()\n\n"
             "    def __len__(self):\n        return len(self._items)\n",
             ("            return None\n", "            raise IndexError('pop from empty stack')\n"),
             "def test_push_pop():\n    s = Stack()\n    s.push(1)\n    s.push(2)\n    assert s.pop() == 2 and len(s) == 1\n",
             "def test_empty_pop():\n    s = Stack()\n    check(s.pop(), raises('IndexError', 'empty'))\n    check(len(s), 0)\n"),
        _swe("RomanNumerals", "numerals", "roman",
             "`to_roman(4)` gives `IIII` and `to_roman(1994)` gives `MDCCCCLXXXXIIII`; it should use subtractive "
             "notation (`IV`, `MCMXCIV`).",
             "_VALUES = [(1000, 'M'), (500, 'D'), (100, 'C'), (50, 'L'), (10, 'X'), (5, 'V'), (1, 'I')]\n\n\n"
             "def to_roman(n):\n    out = ''\n    for value, sym in _VALUES:\n        while n >= value:\n            out += sym\n            n -= value\n    return out\n",
             ("_VALUES = [(1000, 'M'), (500, 'D'), (100, 'C'), (50, 'L'), (10, 'X'), (5, 'V'), (1, 'I')]",
              "_VALUES = [(1000, 'M'), (900, 'CM'), (500, 'D'), (400, 'CD'), (100, 'C'), (90, 'XC'), (50, 'L'), (40, 'XL'),\n"
              "           (10, 'X'), (9, 'IX'), (5, 'V'), (4, 'IV'), (1, 'I')]"),
             "def test_additive():\n    assert to_roman(3) == 'III' and to_roman(2023) == 'MMXXIII'\n",
             "def test_subtractive():\n    assert to_roman(4) == 'IV' and to_roman(9) == 'IX'\n    assert to_roman(1994) == 'MCMXCIV'\n",
             difficulty="medium"),
        _swe("CartDiscount", "shop", "cart",
             "A 10% discount code is applied twice: a cart of 100.0 with `discount=0.1` totals 81.0 instead of 90.0.",
             "class Cart:\n    def __init__(self, discount=0.0):\n        self.items = []\n        self.discount = discount\n\n"
             "    def add(self, price, qty=1):\n        self.items.append(price * qty * (1 - self.discount))\n\n"
             "    def total(self):\n        return round(sum(self.items) * (1 - self.discount), 2)\n",
             ("        self.items.append(price * qty * (1 - self.discount))\n", "        self.items.append(price * qty)\n"),
             "def test_no_discount():\n    c = Cart()\n    c.add(10, 3)\n    assert c.total() == 30\n",
             "def test_discount_once():\n    c = Cart(discount=0.1)\n    c.add(50, 2)\n    assert c.total() == 90.0\n"),
        _swe("ParseKeyValue", "confkit", "kv",
             "`parse('url=http://x?a=1')` fails with ValueError: a value may itself contain `=`; only the first "
             "`=` separates key and value.",
             "def parse(text):\n    out = {}\n    for line in text.splitlines():\n        line = line.strip()\n"
             "        if not line or line.startswith('#'):\n            continue\n        key, value = line.split('=')\n"
             "        out[key.strip()] = value.strip()\n    return out\n",
             ("line.split('=')", "line.split('=', 1)"),
             "def test_basic():\n    assert parse('a = 1\\n# c\\nb=2') == {'a': '1', 'b': '2'}\n",
             "def test_equals_in_value():\n    assert parse('url=http://x?a=1') == {'url': 'http://x?a=1'}\n"),
        _swe("Paginate", "listkit", "pages",
             "`paginate(list(range(10)), page=4, size=3)` returns `[]`, but the last page should hold `[9]`. "
             "`page_count` is off as well.",
             "def page_count(n, size):\n    return n // size\n\n\ndef paginate(items, page, size):\n"
             "    if page < 1 or page > page_count(len(items), size):\n        return []\n"
             "    return items[(page - 1) * size: page * size]\n",
             ("    return n // size\n", "    return -(-n // size)\n"),
             "def test_first_page():\n    assert paginate(list(range(10)), 1, 3) == [0, 1, 2]\n\n\ndef test_out_of_range():\n"
             "    assert paginate([1, 2], 0, 3) == []\n",
             "def test_last_partial_page():\n    assert paginate(list(range(10)), 4, 3) == [9]\n    assert page_count(10, 3) == 4 and page_count(9, 3) == 3\n"),
        _swe("Fibonacci", "seqs", "fib",
             "`fib(0)` returns 1, but the sequence starts 0, 1, 1, 2: `fib(0) == 0`, `fib(1) == 1`, `fib(10) == 55`.",
             "from functools import lru_cache\n\n\n@lru_cache(maxsize=None)\ndef fib(n):\n    if n < 2:\n        return 1\n"
             "    return fib(n - 1) + fib(n - 2)\n",
             ("    if n < 2:\n        return 1\n", "    if n < 2:\n        return n\n"),
             "def test_recursion_defined():\n    assert fib(5) == fib(4) + fib(3)\n",
             "def test_values():\n    assert [fib(i) for i in range(7)] == [0, 1, 1, 2, 3, 5, 8]\n    assert fib(10) == 55\n"),
        _swe("WordWrap", "textkit", "wrap",
             "`wrap(text, width)` drops the last line of the text. `wrap('aa bb cc', 5)` returns `['aa bb']` "
             "instead of `['aa bb', 'cc']`.",
             "def wrap(text, width):\n    lines, current = [], ''\n    for word in text.split():\n"
             "        if current and len(current) + 1 + len(word) > width:\n            lines.append(current)\n            current = word\n"
             "        else:\n            current = f'{current} {word}' if current else word\n    return lines\n",
             ("    return lines\n", "    if current:\n        lines.append(current)\n    return lines\n"),
             "def test_empty():\n    assert wrap('', 10) == []\n",
             "def test_last_line_kept():\n    assert wrap('aa bb cc', 5) == ['aa bb', 'cc']\n    assert wrap('one', 10) == ['one']\n"),
        _swe("CsvQuotes", "csvmini", "line",
             "`split_line('a,\"b,c\",d')` returns four fields; a comma inside double quotes is part of the field, "
             "so the result should be `['a', 'b,c', 'd']` (quotes removed).",
             "def split_line(line):\n    return line.split(',')\n",
             ("    return line.split(',')\n",
              "    fields, cur, quoted = [], '', False\n    for ch in line:\n        if ch == '\"':\n            quoted = not quoted\n"
              "        elif ch == ',' and not quoted:\n            fields.append(cur)\n            cur = ''\n        else:\n            cur += ch\n"
              "    fields.append(cur)\n    return fields\n"),
             "def test_plain():\n    assert split_line('a,b,c') == ['a', 'b', 'c']\n\n\ndef test_empty_fields():\n    assert split_line('a,,b') == ['a', '', 'b']\n",
             "def test_quoted_comma():\n    assert split_line('a,\"b,c\",d') == ['a', 'b,c', 'd']\n",
             difficulty="medium"),
        _swe("BinarySearch", "searchkit", "bsearch",
             "`find(xs, x)` raises IndexError when x is larger than every element; it should return -1 when x "
             "is absent (and the index when present).",
             "def find(xs, x):\n    lo, hi = 0, len(xs)\n    while lo <= hi:\n        mid = (lo + hi) // 2\n        if xs[mid] == x:\n"
             "            return mid\n        if xs[mid] < x:\n            lo = mid + 1\n        else:\n            hi = mid - 1\n    return -1\n",
             ("    lo, hi = 0, len(xs)\n", "    lo, hi = 0, len(xs) - 1\n"),
             "def test_found():\n    assert find([1, 3, 5, 7], 5) == 2\n\n\ndef test_absent_low():\n    assert find([1, 3, 5], 0) == -1\n",
             "def test_absent_high():\n    assert find([1, 3, 5], 9) == -1\n    assert find([], 1) == -1\n"),
        _swe("Fahrenheit", "units", "temp",
             "`c_to_f(100)` returns 132.0; the conversion is F = C * 9/5 + 32 (so 100 C is 212 F).",
             "def c_to_f(c):\n    return c * 5 / 9 + 32\n\n\ndef f_to_c(f):\n    return (f - 32) * 5 / 9\n",
             ("    return c * 5 / 9 + 32\n", "    return c * 9 / 5 + 32\n"),
             "def test_f_to_c():\n    assert f_to_c(212) == 100\n",
             "def test_c_to_f():\n    assert c_to_f(100) == 212 and c_to_f(-40) == -40\n"),
        _swe("LruRecency", "cachekit", "lru",
             "`LRUCache.get` does not mark the key as recently used, so a key that was just read gets evicted "
             "first.",
             "from collections import OrderedDict\n\n\nclass LRUCache:\n    def __init__(self, capacity):\n        self.capacity = capacity\n"
             "        self.data = OrderedDict()\n\n    def get(self, key, default=None):\n        return self.data.get(key, default)\n\n"
             "    def put(self, key, value):\n        self.data[key] = value\n        self.data.move_to_end(key)\n"
             "        if len(self.data) > self.capacity:\n            self.data.popitem(last=False)\n",
             ("        return self.data.get(key, default)\n",
              "        if key not in self.data:\n            return default\n        self.data.move_to_end(key)\n        return self.data[key]\n"),
             "def test_evicts_oldest():\n    c = LRUCache(2)\n    c.put('a', 1)\n    c.put('b', 2)\n    c.put('c', 3)\n    assert c.get('a') is None and c.get('c') == 3\n",
             "def test_get_refreshes():\n    c = LRUCache(2)\n    c.put('a', 1)\n    c.put('b', 2)\n    assert c.get('a') == 1\n    c.put('c', 3)\n"
             "    assert c.get('a') == 1 and c.get('b') is None\n",
             difficulty="medium"),
        _swe("FlattenTuples", "listkit", "flat",
             "`flatten([1, (2, 3), [4, [5]]])` leaves the tuple unflattened; tuples are sequences too (strings "
             "stay whole).",
             "def flatten(items):\n    out = []\n    for x in items:\n        if isinstance(x, list):\n            out.extend(flatten(x))\n"
             "        else:\n            out.append(x)\n    return out\n",
             ("isinstance(x, list)", "isinstance(x, (list, tuple))"),
             "def test_lists():\n    assert flatten([1, [2, [3]]]) == [1, 2, 3]\n\n\ndef test_strings_whole():\n    assert flatten(['ab', ['c']]) == ['ab', 'c']\n",
             "def test_tuples():\n    assert flatten([1, (2, 3), [4, [5]]]) == [1, 2, 3, 4, 5]\n"),
        _swe("ChunkRemainder", "listkit", "chunks",
             "`chunk([1, 2, 3, 4, 5], 2)` returns `[[1, 2], [3, 4]]` and loses the 5; the last, shorter chunk must "
             "be kept.",
             "def chunk(items, n):\n    return [items[i:i + n] for i in range(0, len(items) - n + 1, n)]\n",
             ("range(0, len(items) - n + 1, n)", "range(0, len(items), n)"),
             "def test_exact():\n    assert chunk([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]\n",
             "def test_remainder():\n    assert chunk([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]\n    assert chunk([1], 3) == [[1]]\n"),
        _swe("CamelToSnake", "textkit", "case",
             "`camel_to_snake('HTTPServer')` returns `h_t_t_p_server`; acronyms should stay together: `http_server`, "
             "and `getHTTPResponseCode` becomes `get_http_response_code`.",
             "import re\n\n\ndef camel_to_snake(name):\n    return re.sub(r'(?<!^)([A-Z])', r'_\\1', name).lower()\n",
             ("    return re.sub(r'(?<!^)([A-Z])', r'_\\1', name).lower()\n",
              "    name = re.sub(r'([A-Z]+)([A-Z][a-z])', r'\\1_\\2', name)\n    return re.sub(r'([a-z0-9])([A-Z])', r'\\1_\\2', name).lower()\n"),
             "def test_simple():\n    assert camel_to_snake('camelCase') == 'camel_case'\n    assert camel_to_snake('Word') == 'word'\n",
             "def test_acronyms():\n    assert camel_to_snake('HTTPServer') == 'http_server'\n    assert camel_to_snake('getHTTPResponseCode') == 'get_http_response_code'\n",
             difficulty="hard"),
        _swe("MergeIntervals", "intervals", "merge",
             "`merge([(5, 6), (1, 3), (2, 4)])` returns overlapping intervals: the input is not always sorted. "
             "Expected `[(1, 4), (5, 6)]`.",
             "def merge(intervals):\n    out = []\n    for start, end in intervals:\n        if out and start <= out[-1][1]:\n"
             "            out[-1] = (out[-1][0], max(out[-1][1], end))\n        else:\n            out.append((start, end))\n    return out\n",
             ("    for start, end in intervals:\n", "    for start, end in sorted(intervals):\n"),
             "def test_sorted_input():\n    assert merge([(1, 3), (2, 4), (6, 7)]) == [(1, 4), (6, 7)]\n",
             "def test_unsorted_input():\n    assert merge([(5, 6), (1, 3), (2, 4)]) == [(1, 4), (5, 6)]\n"),
        _swe("CountVowels", "textkit", "vowels",
             "`count_vowels('AEIOU')` returns 0; upper-case vowels count too.",
             "def count_vowels(text):\n    return sum(1 for ch in text if ch in 'aeiou')\n",
             ("if ch in 'aeiou'", "if ch.lower() in 'aeiou'"),
             "def test_lower():\n    assert count_vowels('banana') == 3\n",
             "def test_upper():\n    assert count_vowels('AEIOU') == 5 and count_vowels('Hello World') == 3\n"),
        _swe("EmailCheck", "validators", "email",
             "`is_email('user@localhost')` returns True; an address needs a domain with a dot and a top-level "
             "part of at least 2 letters (`user@mail.example.org` is fine).",
             "import re\n\n_EMAIL = re.compile(r'^[\\w.+-]+@[\\w-]+(\\.[\\w-]+)*$')\n\n\ndef is_email(text):\n    return bool(_EMAIL.match(text))\n",
             ("(\\.[\\w-]+)*$", "(\\.[\\w-]+)*\\.[A-Za-z]{2,}$"),
             "def test_valid():\n    assert is_email('a.b+c@mail.example.org')\n\n\ndef test_no_at():\n    assert not is_email('nope')\n",
             "def test_needs_tld():\n    assert not is_email('user@localhost')\n    assert not is_email('user@host.c')\n    assert is_email('u@x.io')\n"),
        _swe("Transpose", "matrixkit", "ops",
             "`transpose([[1, 2, 3], [4, 5, 6]])` raises IndexError; non-square matrices must work "
             "(the result is 3x2).",
             "def transpose(m):\n    n = len(m)\n    return [[m[j][i] for j in range(n)] for i in range(n)]\n",
             ("    n = len(m)\n    return [[m[j][i] for j in range(n)] for i in range(n)]\n",
              "    return [list(row) for row in zip(*m)]\n"),
             "def test_square():\n    assert transpose([[1, 2], [3, 4]]) == [[1, 3], [2, 4]]\n",
             "def test_rectangular():\n    assert transpose([[1, 2, 3], [4, 5, 6]]) == [[1, 4], [2, 5], [3, 6]]\n"),
        _swe("DedupeOrder", "listkit", "unique",
             "`unique([3, 1, 3, 2, 1])` returns the items in arbitrary order; it must keep first-occurrence order: "
             "`[3, 1, 2]`.",
             "def unique(items):\n    return list(set(items))\n",
             ("    return list(set(items))\n", "    return list(dict.fromkeys(items))\n"),
             "def test_members():\n    assert sorted(unique([2, 2, 1])) == [1, 2]\n",
             "def test_order_kept():\n    assert unique([3, 1, 3, 2, 1]) == [3, 1, 2]\n    assert unique(['b', 'a', 'b']) == ['b', 'a']\n"),
    ]
    names = [t.name for t in T]
    if len(set(names)) != len(names):
        raise RuntimeError("duplicate bundled swe task names")
    return T
