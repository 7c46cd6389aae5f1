"""Pseudo-LaTeX code spans (`` `[t − 2^{lsb(t)} + 1, t]` ``) to arithmatex math (``$...$``).

dpref's pages and docstrings wrote formulas as monospace spans mixing Unicode (ε, Σ, ⌊⌋, ²) with
TeX-like ``^{…}``. ``tex`` turns one such span into TeX; ``is_math`` decides whether a span is a
formula (it has a mathematical sign) or code (it names Python: keyword arguments, quotes, dotted
names, flags), and code stays code. ``convert_markdown`` rewrites the inline spans of a Markdown
text outside fenced blocks. The griffe extension applies it to docstrings at build time; the pages
were rewritten with it once (``python docs_build/mathspans.py FILE…``).
"""

from __future__ import annotations

import re
import sys

GREEK = {
    "α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta", "ε": r"\varepsilon",
    "ζ": r"\zeta", "η": r"\eta", "θ": r"\theta", "κ": r"\kappa", "λ": r"\lambda", "μ": r"\mu",
    "ν": r"\nu", "ξ": r"\xi", "π": r"\pi", "ρ": r"\rho", "σ": r"\sigma", "τ": r"\tau",
    "φ": r"\varphi", "χ": r"\chi", "ψ": r"\psi", "ω": r"\omega", "Γ": r"\Gamma", "Δ": r"\Delta",
    "Θ": r"\Theta", "Λ": r"\Lambda", "Π": r"\Pi", "Σ": r"\sum", "Φ": r"\Phi", "Ψ": r"\Psi",
    "Ω": r"\Omega", "ℓ": r"\ell",
}  # fmt: skip
SYMBOLS = {
    "−": "-", "·": r"\cdot", "×": r"\times", "≤": r"\le", "≥": r"\ge", "≠": r"\ne",
    "≈": r"\approx", "∝": r"\propto", "∈": r"\in", "∋": r"\ni", "∞": r"\infty", "→": r"\to",
    "←": r"\leftarrow", "⇒": r"\Rightarrow", "⟺": r"\iff", "…": r"\dots", "±": r"\pm",
    "∏": r"\prod", "⌊": r"\lfloor", "⌋": r"\rfloor", "⌈": r"\lceil", "⌉": r"\rceil",
    "⊆": r"\subseteq", "∩": r"\cap", "∪": r"\cup", "≫": r"\gg", "≪": r"\ll", "≡": r"\equiv",
    "‖": r"\|", "ℤ": r"\mathbb{Z}", "ℝ": r"\mathbb{R}", "ℕ": r"\mathbb{N}", "½": r"\tfrac12",
    "¼": r"\tfrac14", "%": r"\%", "#": r"\#", "&": r"\&", "′": "'", "″": "''", "÷": r"\div",
    "~": r"\sim", "⊙": r"\odot", "↑": r"\uparrow", "↓": r"\downarrow", "∘": r"\circ", "⊤": r"\top",
}  # fmt: skip
SUPERSCRIPT = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺ᵀ", "0123456789-+T", strict=True))
SUBSCRIPT = dict(zip("₀₁₂₃₄₅₆₇₈₉", "0123456789", strict=True))
COMBINING = {"\u0302": r"\hat", "\u0303": r"\tilde", "\u0304": r"\bar"}
FUNCTIONS = {"log", "ln", "exp", "max", "min", "sup", "inf", "lim", "sin", "cos", "det", "Pr"}
OPERATORS = {"lsb", "popcount", "bits", "Var", "Lap", "Cov", "Geom", "sign", "rank", "diag",
             "tr", "poly", "polylog", "binom", "argmin", "argmax", "round", "floor", "ceil",
             "nnz"}  # fmt: skip

WORDS = {"if", "for", "and", "or", "otherwise", "else", "odd", "even", "with", "where", "when",
         "all", "the", "each", "every", "some", "not", "is", "of", "in", "to", "at", "from",
         "by"}  # fmt: skip

MATH_SIGN = re.compile(r"\^|_\{|[ΣΠ∏⌊⌈√≤≥∈∋≈∝·²³⁰¹⁴⁵⁶⁷⁸⁹⁻₀₁₂₃₄₅₆₇₈₉εδρΔαβγσλθκζωμτℓΩΘΦ∞≠⊆…]")
CODE_SIGN = re.compile(
    r"[\"`$\\]|'.*'|[A-Za-z_]{2,}=|--|>>>|\bdpref\b|\.py\b|\.md\b|\b[a-z_]+\.[a-z_]+\(|\bnp\.|\bNone\b|\bTrue\b"
    r"|\bFalse\b|\bdef\b|\bimport\b|\blambda\b|\w\[\d*:|\b[A-Z][a-z]+[A-Z]\w*\(|[a-z]{2,}_[a-z]{2,}"
    r"|\bFraction\(|\b(?:delta|epsilon|rho)\(|\b[A-Z]\w*\.[a-z_]+\(|\w: [a-z]{3,}"
)


def is_math(span: str) -> bool:
    """Whether a code span's text is a formula rather than code.

    Code: Python (keyword arguments, quotes, dotted calls, flags), messages (``k=4: must be
    odd``), labels that open with a word (``sensitivity S(α)``, a row of ``dpref verify``) and
    printed text (``VIOLATION: …``, a lone ``…``, a value with its ``sha256``).
    """
    label = re.match(r"([a-z]{5,}) ", span)
    if label and label.group(1) not in FUNCTIONS | OPERATORS | WORDS:
        return False
    if re.match(r"[A-Z]{3,}:", span) or span.strip() == "…" or "sha256" in span:
        return False  # printed text: a verdict (VIOLATION: …), an elision, a digest
    return bool(MATH_SIGN.search(span)) and not CODE_SIGN.search(span)


def _braced(text: str, start: int) -> int:
    """The index just past the group that starts at ``text[start]`` (``(…)`` or one token)."""
    if start < len(text) and text[start] == "(":
        depth = 0
        for i in range(start, len(text)):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                return i + 1
        return len(text)
    match = re.match(r"[A-Za-z0-9]+[₀₁₂₃₄₅₆₇₈₉]*|[^\sA-Za-z0-9]", text[start:])
    return start + (match.end() if match else 0)


def tex(span: str, *, in_table: bool = False) -> str:
    """The TeX of one pseudo-LaTeX span."""
    out: list[str] = []
    braces: list[bool] = []  # True: a TeX group opened by ^{ or _{; False: a set's brace
    i = 0
    while i < len(span):
        ch = span[i]
        if ch == "√":
            end = _braced(span, i + 1)
            inner = span[i + 1 : end]
            if inner.startswith("(") and inner.endswith(")"):
                inner = inner[1:-1]
            out.append(r"\sqrt{" + tex(inner, in_table=in_table) + "}")
            i = end
            continue
        if ch in SUPERSCRIPT or ch in SUBSCRIPT:
            table, mark = (SUPERSCRIPT, "^") if ch in SUPERSCRIPT else (SUBSCRIPT, "_")
            j = i
            while j < len(span) and span[j] in table:
                j += 1
            digits = "".join(table[c] for c in span[i:j])
            word = re.match(r"_([A-Za-z]+)", span[j:]) if mark == "_" else None
            if word:  # p₁_low: one subscript, not a double one
                name = word.group(1)
                digits += "," + (name if len(name) == 1 else r"\mathit{" + name + "}")
                j += word.end()
            out.append(mark + "{" + digits + "}")
            i = j
            continue
        if i + 1 < len(span) and span[i + 1] in COMBINING:
            base = r"\Sigma" if ch == "Σ" else GREEK.get(ch, ch)  # Σ̂: a matrix, not a sum
            out.append(COMBINING[span[i + 1]] + "{" + base + "}")
            i += 2
            continue
        if ch in "^_" and (digits := re.match(r"[-−]?[0-9]{2,}|[-−][0-9]", span[i + 1 :])):
            out.append(ch + "{" + digits.group(0).replace("−", "-") + "}")  # 2^−64: one group
            i += 1 + digits.end()
            continue
        if ch == "^" and span[i + 1 : i + 2] in ("⌈", "⌊"):  # 2^⌈log₂W⌉: the whole ceiling
            end = span.find({"⌈": "⌉", "⌊": "⌋"}[span[i + 1]], i + 2)
            end = len(span) if end < 0 else end + 1
            out.append("^{" + tex(span[i + 1 : end], in_table=in_table) + "}")
            i = end
            continue
        if ch == "^" and span[i + 1 : i + 2] == "(":  # 2^(k−1): the parentheses group
            end = _braced(span, i + 1)
            out.append("^{" + tex(span[i + 2 : end - 1], in_table=in_table) + "}")
            i = end
            continue
        if ch in "^_" and (word := re.match(r"[A-Za-z]{2,}", span[i + 1 :])):
            inner = tex(word.group(0), in_table=in_table)  # μ_lb, X_ij: the whole index
            out.append(ch + "{" + inner + "}")
            i += 1 + word.end()
            continue
        if ch == "^" and (sub := re.match(r"[−-]?([α-ωΑ-Ω])([₀-₉]+)", span[i + 1 :])):
            inner = tex(sub.group(0), in_table=in_table)  # e^ε₀, e^−ε₀: ε₀ is the exponent
            out.append("^{" + inner + "}")
            i += 1 + sub.end()
            continue
        if (
            ch == " "
            and 0 < i < len(span) - 1
            and span[i - 1].isascii()
            and span[i - 1].isalpha()
            and span[i + 1].isascii()
            and span[i + 1].isalpha()
            and not (out and out[-1].endswith(" "))  # after \log : TeX spaces it already
        ):
            out.append(r"\ ")
            i += 1
            continue
        if ch == "{":
            grouping = i > 0 and span[i - 1] in "^_"
            braces.append(grouping)
            out.append("{" if grouping else r"\{")
        elif ch == "}":
            grouping = braces.pop() if braces else False
            out.append("}" if grouping else r"\}")
        elif ch == "|" and in_table:
            out.append(r"\vert ")
        elif ch in GREEK or ch in SYMBOLS:
            command = GREEK.get(ch) or SYMBOLS[ch]
            out.append(command + (" " if command[-1].isalpha() else ""))
        elif ch.isascii() and ch.isalpha():
            match = re.match(r"[A-Za-z]+", span[i:])
            assert match is not None
            word = match.group(0)
            if len(word) == 1:
                out.append(word)
            elif word in WORDS:
                out.append(r"\text{ " + word + " }")
            elif word in FUNCTIONS:
                out.append("\\" + word + " ")
            elif word == "mod":
                out.append(r"\bmod ")
            elif word in OPERATORS:
                out.append(r"\operatorname{" + word + "}")
            elif len(word) <= 3 and word.isupper() is False and not word.islower():
                out.append(word)  # a product such as Dq, LW
            else:
                out.append(r"\mathit{" + word + "}" if len(word) > 3 else word)
            i += len(word)
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out).strip()


FENCE = re.compile(r"^(\s*)(```|~~~)")
SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
DOUBLE_SPAN = re.compile(r"``([^`\n]+?)``")


def convert_markdown(text: str, *, double: bool = False) -> str:
    """Rewrite the formula spans of Markdown ``text`` (outside fences) as ``$…$``.

    ``double`` also converts RST-style double-backtick spans (docstrings).
    """
    lines = text.split("\n")
    fence: str | None = None
    for n, line in enumerate(lines):
        match = FENCE.match(line)
        if match:
            fence = None if fence == match.group(2) else (fence or match.group(2))
            continue
        if fence:
            continue
        in_table = line.lstrip().startswith("|")

        def one(m: re.Match[str], in_table: bool = in_table) -> str:
            body = m.group(1)
            return f"${tex(body, in_table=in_table)}$" if is_math(body) else m.group(0)

        if double:
            line = DOUBLE_SPAN.sub(one, line)
        lines[n] = SPAN.sub(one, line)
    return "\n".join(lines)


if __name__ == "__main__":
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as f:
            before = f.read()
        after = convert_markdown(before)
        if after != before:
            with open(path, "w", encoding="utf-8") as f:
                f.write(after)
            print(path)
