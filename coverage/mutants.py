#!/usr/bin/env python3
"""coverage/mutants.py: enumerates and applies the mutants of src/core/*.c
for coverage/mutate.sh (see docs/mutation.md).

  mutants.py list ROOT              one mutant a line, tab-separated:
                                    id file line class before after
  mutants.py apply ROOT ID OUTFILE  writes the mutated file to OUTFILE
  mutants.py sample ROOT K SEED     K ids drawn from SEED, ascending
  mutants.py find ROOT FILE CLASS OLD NEW
                                    the id of the first mutant of FILE and
                                    CLASS whose line contains OLD before and
                                    NEW after (the quick set is named so)

Mutants are enumerated from the sources in a fixed order (files sorted by
name, then line, then column, then class), one change on one line each, so
that the same tree always gives the same numbering. Comments, string and
character literals, preprocessor lines and the lines holding an invariant
(assert, __builtin_trap, static_assert) are never mutated.
"""
import os
import re
import sys

STATES = ["OTM_CREATED", "OTM_RUNNING", "OTM_WAITING", "OTM_FINISHED",
          "OTM_FAILED"]
RESULTS = ["OTM__T_PENDING", "OTM__T_DONE", "OTM__T_ERROR", "OTM__T_FAILED"]
INVARIANT = re.compile(r"\b(assert|static_assert|_Static_assert|__builtin_trap)\b")
TYPES = (r"(?:const\s+|static\s+|volatile\s+|unsigned\s+|signed\s+|struct\s+"
         r"|enum\s+|union\s+)*")
DECL = re.compile(r"^\s*" + TYPES + r"[A-Za-z_]\w*[\s*]+[A-Za-z_]\w*\s*(=|;|\[|,)")
CALL_OR_ASSIGN = re.compile(
    r"^\s*(\*\s*)?[A-Za-z_][\w.\->\[\]() *]*?(\s*(=|\+=|-=|\|=|&=|\^=|<<=|>>=)"
    r"|\+\+|--|\s*\()")


def mask(lines):
    """Returns the lines with comments, string and character literals
    replaced by blanks (same length), and the set of preprocessor lines
    (continuations included)."""
    out = []
    pre = set()
    in_comment = False
    cont = False
    for n, line in enumerate(lines):
        s = list(line)
        i = 0
        if cont or (not in_comment and line.lstrip().startswith("#")):
            pre.add(n)
            cont = line.rstrip("\n").endswith("\\")
            out.append(" " * len(line))
            continue
        while i < len(s):
            if in_comment:
                if line.startswith("*/", i):
                    s[i] = s[i + 1] = " "
                    i += 2
                    in_comment = False
                else:
                    if s[i] != "\n":
                        s[i] = " "
                    i += 1
                continue
            if line.startswith("/*", i):
                in_comment = True
                s[i] = s[i + 1] = " "
                i += 2
            elif line.startswith("//", i):
                for j in range(i, len(s)):
                    if s[j] != "\n":
                        s[j] = " "
                break
            elif s[i] in "\"'":
                q = s[i]
                j = i + 1
                while j < len(s) and s[j] != q:
                    j += 2 if s[j] == "\\" else 1
                for k in range(i + 1, min(j, len(s))):
                    s[k] = " "
                i = j + 1
            else:
                i += 1
        out.append("".join(s))
    return out, pre


# Comparison operators: the token, what "flip" makes of it (negation) and
# what "bound" makes of it (off by one).
FLIP = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}
BOUND = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
OPS = re.compile(r"<<=|>>=|<<|>>|->|==|!=|<=|>=|&&|\|\||<|>")
NUMBER = re.compile(r"(?<![\w.])(\d+)([uUlL]*)(?![\w.])")
IDENT = re.compile(r"\b(" + "|".join(STATES + RESULTS) + r")\b")


def balanced_paren(text, start):
    """Index of the parenthesis closing the one at start, or -1."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


def line_mutants(line, masked):
    """(column, class, new line) for each mutant of one line."""
    res = []
    code = masked.rstrip("\n")
    for m in OPS.finditer(code):
        op, a, b = m.group(0), m.start(), m.end()
        if op in ("<<=", ">>=", "<<", ">>", "->"):
            continue
        if op in ("<", ">") and re.search(r"#\s*include", code):
            continue
        if op == "&&":
            res.append((a, "logic", line[:a] + "||" + line[b:]))
        elif op == "||":
            res.append((a, "logic", line[:a] + "&&" + line[b:]))
        else:
            res.append((a, "flip", line[:a] + FLIP[op] + line[b:]))
            if op in BOUND:
                res.append((a, "bound", line[:a] + BOUND[op] + line[b:]))
    for m in NUMBER.finditer(code):
        # Array sizes in declarations and case labels make compile errors or
        # duplicates more than mutants: skip case labels.
        if re.match(r"^\s*case\b", code):
            continue
        a, b = m.start(1), m.end(1)
        if len(m.group(1)) > 1 and m.group(1).startswith("0"):
            continue  # octal
        v = int(m.group(1))
        res.append((a, "const", line[:a] + str(v + 1) + line[b:]))
        if v > 0:
            res.append((a, "const", line[:a] + str(v - 1) + line[b:]))
    for m in re.finditer(r"\b(if|while)\s*\(", code):
        p = m.end() - 1
        q = balanced_paren(code, p)
        if q < 0:
            continue
        res.append((m.start(), "cond",
                    line[:p + 1] + "!(" + line[p + 1:q] + ")" + line[q:]))
    for m in IDENT.finditer(code):
        if re.match(r"^\s*case\b", code):
            continue
        name = m.group(1)
        group = STATES if name in STATES else RESULTS
        nxt = group[(group.index(name) + 1) % len(group)]
        res.append((m.start(), "state", line[:m.start()] + nxt + line[m.end():]))
    stripped = code.strip()
    if stripped.endswith(";") and stripped.count("(") == stripped.count(")") \
            and "{" not in stripped and "}" not in stripped:
        if re.match(r"^(if|for|while|switch|else|do)\b", stripped):
            pass
        elif re.match(r"^(return\b|break\s*;|continue\s*;|goto\b)", stripped) or \
                (CALL_OR_ASSIGN.match(code) and not DECL.match(code)):
            indent = line[:len(line) - len(line.lstrip())]
            res.append((len(indent), "drop", indent + ";\n"))
    for m in re.finditer(r"\b(if\s*\(.*\))\s*(return\b[^;]*;|break\s*;|continue\s*;|goto\s+\w+\s*;)",
                         code):
        # An early exit at the end of an if line: dropped, the if kept.
        a, b = m.start(2), m.end(2)
        res.append((a, "drop", line[:a] + ";" + line[b:]))
    res.sort(key=lambda r: (r[0], r[1]))
    return res


def enumerate_all(root):
    core = os.path.join(root, "src", "core")
    muts = []
    for name in sorted(os.listdir(core)):
        if not name.endswith(".c"):
            continue
        path = os.path.join(core, name)
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
        masked, pre = mask(lines)
        for n, line in enumerate(lines):
            if n in pre or not masked[n].strip() or INVARIANT.search(masked[n]):
                continue
            seen = set()
            for col, cls, new in line_mutants(line, masked[n]):
                if new == line or new in seen:
                    continue
                seen.add(new)
                muts.append((name, n + 1, cls, line, new))
    return muts


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cmd, root = sys.argv[1], sys.argv[2]
    muts = enumerate_all(root)
    if cmd == "list":
        for i, (name, n, cls, old, new) in enumerate(muts, 1):
            print("%d\t%s\t%d\t%s\t%s\t%s" % (i, name, n, cls,
                                              old.strip(), new.strip()))
    elif cmd == "apply":
        i = int(sys.argv[3])
        if not 1 <= i <= len(muts):
            sys.exit("mutants.py: no mutant %d (1..%d)" % (i, len(muts)))
        name, n, cls, old, new = muts[i - 1]
        with open(os.path.join(root, "src", "core", name), encoding="utf-8") as f:
            lines = f.readlines()
        lines[n - 1] = new
        with open(sys.argv[4], "w", encoding="utf-8") as f:
            f.writelines(lines)
    elif cmd == "sample":
        # Our own generator (64-bit LCG, Knuth's constants), not random:
        # the same seed gives the same sample on every Python.
        k, x = int(sys.argv[3]), int(sys.argv[4])
        ids = list(range(1, len(muts) + 1))
        k = min(k, len(ids))
        for i in range(k):
            x = (x * 6364136223846793005 + 1442695040888963407) % 2 ** 64
            j = i + (x >> 33) % (len(ids) - i)
            ids[i], ids[j] = ids[j], ids[i]
        print(",".join(str(i) for i in sorted(ids[:k])))
    elif cmd == "find":
        name, cls, old, new = sys.argv[3:7]
        for i, (f, n, c, o, w) in enumerate(muts, 1):
            if f == name and c == cls and old in o and new in w:
                print(i)
                return
        sys.exit("mutants.py: no %s mutant of %s with '%s' -> '%s'"
                 % (cls, name, old, new))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
