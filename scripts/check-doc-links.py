#!/usr/bin/env python3
"""Every relative link in README.md and docs/**/*.md points at something that exists.

A link `[text](path)`, `[text](path#anchor)`, `[text](#anchor)`, an image
`![alt](path)` or a reference definition `[ref]: path` must name an existing file or
directory (relative to the file that holds it; a leading `/` is the repository's root).
When it names an anchor and the target is markdown, the target must have a heading
whose GitHub slug is that anchor, or an explicit `<a id="…">` / `<a name="…">`.

GitHub's slug: the heading's text as rendered (markup gone, a link's text kept),
lowercased, every character that is not a letter, digit, `-`, `_` or space removed,
each space made `-`; the second heading with the same slug gets `-1`, the third `-2`.

Skipped: links with a scheme (`http:`, `https:`, `mailto:`, …), and anything inside a
fenced code block or an inline code span. Prints each broken link as
`file:line: target (why)` and exits 1 if there is any. Needs nothing but Python 3.
"""

import os
import re
import sys
import unicodedata
from urllib.parse import unquote

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
ANCHOR_TAG = re.compile(r"""<a\s[^>]*?\b(?:id|name)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.I)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
REF_DEF = re.compile(r"^ {0,3}\[([^\]]+)\]:\s*(<[^>]*>|\S+)")


def markdown_files():
    files = []
    readme = os.path.join(ROOT, "README.md")
    if os.path.isfile(readme):
        files.append(readme)
    for base, dirs, names in os.walk(os.path.join(ROOT, "docs")):
        dirs.sort()
        for name in sorted(names):
            if name.endswith(".md"):
                files.append(os.path.join(base, name))
    return files


def strip_inline_code(text):
    """`text` with every inline code span blanked: same length and the same line breaks,
    so offsets and line numbers hold. A span may cross lines within a paragraph."""
    out = []
    i = 0
    n = len(text)
    while i < n:
        if text[i] == "`":
            j = i
            while j < n and text[j] == "`":
                j += 1
            ticks = j - i
            # The closing run is the next run of exactly as many backticks.
            k = j
            end = -1
            while k < n:
                if text[k] == "`":
                    m = k
                    while m < n and text[m] == "`":
                        m += 1
                    if m - k == ticks:
                        end = k
                        break
                    k = m
                else:
                    k += 1
            if end == -1:
                out.append(text[i:j])
                i = j
                continue
            close = end + ticks
            out.append("".join("\n" if c == "\n" else " " for c in text[i:close]))
            i = close
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def prose_lines(text):
    """(line number, line) for every line outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                continue
            yield number, line
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and \
                line.strip() == m.group(1):
            fence = None


def paragraphs(text):
    """(first line number, lines) for each run of consecutive non-blank prose lines."""
    block = []
    start = None
    last = None
    for number, line in prose_lines(text):
        if line.strip() and (last is None or number == last + 1 or not block):
            if not block:
                start = number
            block.append(line)
        elif line.strip():
            yield start, block
            start, block = number, [line]
        else:
            if block:
                yield start, block
            block = []
        last = number
    if block:
        yield start, block


def rendered_text(heading):
    """A heading's text as GitHub renders it, before the slug is taken."""
    text = heading
    text = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", text)  # images: their alt text
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links: their text
    text = re.sub(r"\[([^\]]*)\]\[[^\]]*\]", r"\1", text)  # reference links
    text = re.sub(r"<[^>]+>", "", text)  # html tags
    text = text.replace("`", "")
    text = re.sub(r"(\*+)(?=\S)(.+?)(?<=\S)\1", r"\2", text)  # *emphasis*, **strong**
    text = re.sub(r"(?<![A-Za-z0-9])(_+)(?=\S)(.+?)(?<=\S)\1(?![A-Za-z0-9])", r"\2", text)
    text = re.sub(r"\\(.)", r"\1", text)  # backslash escapes
    return text.strip()


def slug(heading):
    text = rendered_text(heading).lower()
    kept = []
    for ch in text:
        category = unicodedata.category(ch)
        if ch in "-_ " or category[0] in "LNM" or category == "Pc":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


_anchor_cache = {}


def anchors_of(path):
    """Every anchor a markdown file defines: heading slugs and explicit ids."""
    if path in _anchor_cache:
        return _anchor_cache[path]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    anchors = set()
    counts = {}

    def add_heading(heading):
        base = slug(heading)
        seen = counts.get(base, 0)
        counts[base] = seen + 1
        anchors.add(base if seen == 0 else f"{base}-{seen}")

    previous = None  # the previous prose line, for setext headings
    for _, lines in paragraphs(text):
        for m in ANCHOR_TAG.finditer(strip_inline_code("\n".join(lines))):
            anchors.add(next(g for g in m.groups() if g is not None))
    for _, line in prose_lines(text):
        m = ATX.match(line)
        if m:
            add_heading(m.group(2) or "")
            previous = None
            continue
        m = SETEXT.match(line)
        if m and previous is not None and previous.strip() and \
                not re.match(r"^ {0,3}([-*+]|\d+[.)]|>|\|)", previous):
            add_heading(previous.strip())
            previous = None
            continue
        previous = line
    _anchor_cache[path] = anchors
    return anchors


def link_targets(line):
    """(offset, target) of inline links and images in text whose code spans are blanked."""
    i = 0
    n = len(line)
    while True:
        start = line.find("](", i)
        if start == -1:
            return
        # Find the matching ')' (targets may hold balanced parentheses).
        j = start + 2
        depth = 1
        if j < n and line[j] == "<":
            end = line.find(">", j)
            if end == -1:
                i = start + 2
                continue
            yield j, line[j + 1:end]
            i = end + 1
            continue
        while j < n and depth:
            if line[j] == "\\":
                j += 2
                continue
            if line[j] == "(":
                depth += 1
            elif line[j] == ")":
                depth -= 1
            j += 1
        if depth:
            i = start + 2
            continue
        inner = line[start + 2:j - 1].strip()
        # `[text](target "title")`: the target is the first word.
        target = inner.split()[0] if inner else ""
        yield start + 2, target
        i = j


def check_target(source, target):
    """Why `target`, linked from `source`, is broken; None when it resolves."""
    if not target or SCHEME.match(target):
        return None
    path_part, _, anchor = target.partition("#")
    path_part = unquote(path_part)
    anchor = unquote(anchor)
    if path_part:
        if path_part.startswith("/"):
            resolved = os.path.join(ROOT, path_part.lstrip("/"))
        else:
            resolved = os.path.join(os.path.dirname(source), path_part)
        resolved = os.path.normpath(resolved)
        if not os.path.exists(resolved):
            return "no such file"
    else:
        resolved = source
    if not anchor or not os.path.isfile(resolved) or not resolved.endswith(".md"):
        return None
    if anchor not in anchors_of(resolved):
        return f"no heading or anchor '{anchor}' in {os.path.relpath(resolved, ROOT)}"
    return None


def main():
    broken = 0
    checked = 0
    for path in markdown_files():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        rel = os.path.relpath(path, ROOT)
        for start, lines in paragraphs(text):
            prose = strip_inline_code("\n".join(lines))
            found = list(link_targets(prose))
            offset = 0
            for i, line in enumerate(prose.split("\n")):
                m = REF_DEF.match(line)
                if m:
                    found.append((offset + m.start(2), m.group(2).strip("<>")))
                offset += len(line) + 1
            for at, target in sorted(found):
                number = start + prose.count("\n", 0, at)
                checked += 1
                why = check_target(path, target)
                if why:
                    broken += 1
                    print(f"{rel}:{number}: {target} ({why})")
    if broken:
        print(f"check-doc-links: {broken} broken of {checked} links", file=sys.stderr)
        return 1
    print(f"check-doc-links: {checked} links, none broken", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
