"""A command shown to be run, in lines no wider than the terminal where its words allow: broken
between words with a shell's ` \\`, so that it still runs as printed (help examples, and the
commands messages name with a digest too long for one line)."""

from __future__ import annotations


def example_lines(line: str, width: int) -> list[str]:
    """An indented example command in lines of at most `width` columns where its words allow:
    broken between words with ` \\` (continued four columns deeper), its `# comment` on a line of
    its own above it when the line does not fit."""
    if len(line) <= width:
        return [line]
    margin = line[: len(line) - len(line.lstrip())]
    command, hash_, comment = line.strip().partition("  #")
    out = [f"{margin}#{comment}".rstrip()] if hash_ else []
    words = shell_words(command)
    current = margin + words[0]
    for word in words[1:]:
        if len(current) + 1 + len(word) + 2 > width:
            out.append(current + " \\")
            current = margin + "    " + word
        else:
            current += " " + word
    out.append(current)
    return out


def shell_words(command: str) -> list[str]:
    """`command` split at the spaces outside quotes, each word as written (quotes kept)."""
    words, current, quote = [], "", ""
    for char in command:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == " ":
            if current:
                words.append(current)
            current = ""
            continue
        current += char
    return [*words, current] if current else words
