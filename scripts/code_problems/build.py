"""Rebuild gem/data/bundled/code_problems.jsonl from problems.py (run: python scripts/code_problems/build.py [OUT]).

Test inputs come from each problem's generator with Random(1000 * k + i); stdin/stdout outputs come
from running the reference solution in gem.sandbox.
"""
import json, os, random, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from problems import P
from gem.sandbox import Sandbox
sb = Sandbox()
rows = []
for k, p in enumerate(P):
    inputs = []
    seen = set()
    for i in range(200):
        if len(inputs) >= p["n_tests"]:
            break
        x = p["gen"](random.Random(1000 * k + i))
        key = json.dumps(x)
        if key not in seen:
            seen.add(key); inputs.append(x)
    if p["fn_name"]:
        g = {}
        exec(p["solution"], g)
        fn = g.get(p["fn_name"]) or getattr(g["Solution"](), p["fn_name"])
        outputs = [json.loads(json.dumps(fn(*x))) for x in inputs]
        if p["layout"] == "dict":
            tests = {"fn_name": p["fn_name"], "inputs": inputs, "outputs": outputs}
        else:
            tests = [{"input": json.dumps(x), "output": json.dumps(y), "type": "function_call", "fn_name": p["fn_name"]}
                     for x, y in zip(inputs, outputs)]
        ex_call = f"{p['fn_name']}({', '.join(map(repr, inputs[0]))})"
        statement = p["statement"] + f"\n\nExample: {ex_call} returns {outputs[0]!r}."
        style = "function"
    else:
        outputs = []
        for x in inputs:
            r = sb.run(p["solution"], x, timeout=20)
            assert r.ok, (p["name"], r)
            outputs.append(r.stdout)
        if p["layout"] == "dict":
            tests = {"inputs": inputs, "outputs": outputs}
        else:
            tests = [{"input": x, "output": y, "type": "stdin_stdout"} for x, y in zip(inputs, outputs)]
        shortest = min(range(len(inputs)), key=lambda i: len(inputs[i]) + len(outputs[i]))
        statement = (p["statement"] + f"\n\nExample input:\n{inputs[shortest]}\nExample output:\n{outputs[shortest]}").rstrip()
        style = "stdio"
    rows.append({"name": p["name"], "difficulty": p["difficulty"], "style": style,
                 "problem": f"{p['name']}\n\n{statement}", "tests": json.dumps(tests), "solution": p["solution"],
                 "source": "gem-bundled"})
order = {"easy": 0, "medium": 1, "hard": 2}
rows.sort(key=lambda r: order[r["difficulty"]])
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "gem", "data", "bundled", "code_problems.jsonl"
)
with open(OUT, "w") as fh:
    for r in rows:
        fh.write(json.dumps(r) + "\n")
from collections import Counter
print(len(rows), Counter(r["difficulty"] for r in rows), Counter(r["style"] for r in rows))
