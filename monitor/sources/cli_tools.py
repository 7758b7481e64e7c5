"""What Claude Code's and Codex CLI's tools are to the detectors, and their results as outcomes.

The detectors judge tool calls by OpenClaw's outcome shapes (``monitor/detect/outcomes.py``):
an ``exec`` result is ``details = {status, exitCode, aggregated, timedOut}``, a ``write``
result may say ``changed: false`` (no progress), everything else is hashed as
``{details, text}``. Each CLI tool is put in one of four kinds, named by the OpenClaw tool
whose shape it has (``OPENCLAW_TOOL``):

============  ==================================================  ==========================
kind          Claude Code                                         Codex CLI
============  ==================================================  ==========================
exec          Bash                                                exec_command, write_stdin,
                                                                  shell, shell_command,
                                                                  local_shell, container.exec
read          Read, Grep, Glob, LS, NotebookRead                  read_file, list_dir,
                                                                  grep_files, view_image
write         Edit, Write, MultiEdit, NotebookEdit                apply_patch
fetch         WebFetch, WebSearch                                 web_search
============  ==================================================  ==========================

Calls keep the CLI's own tool name (the name a user knows, the one ``tools`` counts);
``openclaw_tool`` names the OpenClaw tool whose outcome rules apply to it, for the detection
engine, which picks those rules by the name it hashes a call under.

Results are shaped here so that equal outcomes hash equal and volatile framing does not leak
in: Codex's ``Wall time: 0.0123 seconds`` and ``Chunk ID: 1a2b3c`` lines change on every call,
so an exec result keeps only the exit code and the command's output (``aggregated``), which is
also the result's ``text``. Claude Code's Bash result is the output as the model saw it, a
failing command's prefixed ``Exit code N``; its exit code becomes ``exitCode``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from monitor import untrusted_json

EXEC, READ, WRITE, FETCH = "exec", "read", "write", "fetch"
OPENCLAW_TOOL = {EXEC: "exec", READ: "read", WRITE: "write", FETCH: "web_fetch"}

CLAUDE_CODE_KINDS = {
    "Bash": EXEC,
    "Read": READ, "Grep": READ, "Glob": READ, "LS": READ, "NotebookRead": READ,
    "Edit": WRITE, "Write": WRITE, "MultiEdit": WRITE, "NotebookEdit": WRITE,
    "WebFetch": FETCH, "WebSearch": FETCH,
}
CODEX_KINDS = {
    "exec_command": EXEC, "write_stdin": EXEC, "shell": EXEC, "shell_command": EXEC,
    "local_shell": EXEC, "container.exec": EXEC,
    "read_file": READ, "list_dir": READ, "grep_files": READ, "view_image": READ,
    "apply_patch": WRITE,
    "web_search": FETCH,
}
KINDS = {"claude-code": CLAUDE_CODE_KINDS, "codex": CODEX_KINDS}

_CLAUDE_EXIT = re.compile(r"Exit code (-?\d{1,9})(?:\n|\Z)")
_CODEX_HEADER = re.compile(
    r"(?:Chunk ID: [^\n]*\n)?"
    r"(?:Exit code: (?P<code>-?\d{1,9})\n)?"
    r"Wall time: [^\n]*\n"
    r"(?:Process exited with code (?P<exited>-?\d{1,9})\n)?"
    r"(?:Process running with (?:session|command) ID (?P<running>[^\n]*)\n)?"
    r"(?:Total output lines: \d+\n)?"
    r"(?:Original token count: \d+\n)?"
    r"Output:\n?")
_TIMED_OUT = re.compile(r"command timed out after \d+ milliseconds")


def tool_kind(source: str, name: str) -> str | None:
    """The kind of a tool of ``source`` ("claude-code" or "codex"), None for other tools."""
    return KINDS.get(source, {}).get(name)


def openclaw_tool(source: str, name: str) -> str:
    """The OpenClaw tool whose outcome rules apply to ``name``, or ``name`` itself."""
    kind = tool_kind(source, name)
    return OPENCLAW_TOOL[kind] if kind else name


def exec_details(exit_code: int | None, output: str, *, running: bool = False,
                 timed_out: bool = False) -> dict:
    """OpenClaw's exec details for a command that exited (or still runs)."""
    if running:
        return {"status": "running", "tail": output}
    details: dict[str, Any] = {"status": "completed" if exit_code == 0 else "failed",
                               "exitCode": exit_code, "aggregated": output}
    if timed_out:
        details["timedOut"] = True
    return details


# ------------------------------------------------------------------ Claude Code

def claude_result(kind: str | None, text: str, is_error: bool, tool_use_result: Any) -> Any:
    """``details`` of a Claude Code ``tool_result`` (``text`` is its content as a string).

    exec: a failing command's content starts ``Exit code N`` (read only from an error result:
    a command's own output may say anything); an error without it (a denied or unknown tool)
    has no details, so it hashes as an error. write: an update whose
    ``structuredPatch`` is empty changed nothing. fetch: the URL and HTTP code."""
    extra = tool_use_result if isinstance(tool_use_result, dict) else {}
    if kind == EXEC:
        match = _CLAUDE_EXIT.match(text) if is_error else None
        if match:
            return exec_details(int(match.group(1)), text[match.end():])
        if is_error:
            return None
        interrupted = extra.get("interrupted") is True
        return exec_details(None if interrupted else 0, text)
    if kind == WRITE and not is_error:
        patch = extra.get("structuredPatch")
        unchanged = isinstance(patch, list) and not patch and extra.get("type") != "create"
        return {"changed": not unchanged}
    if kind == FETCH and not is_error:
        return {key: extra[key] for key in ("url", "code") if isinstance(extra.get(key),
                                                                         (str, int))}
    return None


def claude_text(content: Any) -> str:
    """A ``tool_result``'s content as one string (a string, or the text parts of a list)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text") for part in content
                         if isinstance(part, dict) and part.get("type") == "text"
                         and isinstance(part.get("text"), str))
    return ""


# -------------------------------------------------------------------- Codex CLI

@dataclass(frozen=True, slots=True)
class CodexOutput:
    """A Codex tool output taken apart: what the ``ToolResult`` carries."""

    is_error: bool
    details: Any
    text: str


def codex_output_text(output: Any) -> tuple[str, bool | None]:
    """``(text, success)`` of a ``function_call_output.output``: a string, a list of content
    items, or (older versions) ``{"content": ..., "success": bool}``."""
    if isinstance(output, str):
        return output, None
    if isinstance(output, list):
        return "\n".join(item.get("text") for item in output if isinstance(item, dict)
                         and isinstance(item.get("text"), str)), None
    if isinstance(output, dict):
        text, _ = codex_output_text(output.get("content"))
        success = output.get("success")
        return text, success if isinstance(success, bool) else None
    return "", None


def parse_exec_output(text: str) -> tuple[int | None, bool, str] | None:
    """``(exit code, still running, output)`` of a Codex shell result, or None when it has
    none of the known forms: the JSON ``{"output", "metadata": {"exit_code"}}`` of ``shell``,
    the ``Exit code: N / Wall time / Output:`` text of ``shell_command``, and the
    ``Wall time / Process exited with code N / Output:`` text of ``exec_command``."""
    if text.startswith("{") and '"metadata"' in text:
        try:
            value = untrusted_json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict) and isinstance(value.get("output"), str) \
                and isinstance(value.get("metadata"), dict):
            code = value["metadata"].get("exit_code")
            if type(code) is int:
                return code, False, value["output"]
    match = _CODEX_HEADER.match(text)
    if match is None:
        return None
    code = match.group("code") or match.group("exited")
    running = match.group("running") is not None and code is None
    return (int(code) if code is not None else None), running, text[match.end():]


def codex_result(kind: str | None, output: Any) -> CodexOutput:
    """The ``ToolResult`` fields of a Codex ``function_call_output`` or
    ``custom_tool_call_output`` of a tool of ``kind``."""
    text, success = codex_output_text(output)
    failed = success is False
    if kind in (EXEC, WRITE):
        parsed = parse_exec_output(text)
        if parsed is not None:
            code, running, body = parsed
            if kind == WRITE:
                return CodexOutput(failed or (code not in (None, 0)),
                                   {"exitCode": code} if code is not None else None, body)
            timed_out = _TIMED_OUT.match(body) is not None
            return CodexOutput(failed, exec_details(code, body, running=running,
                                                    timed_out=timed_out), body)
    return CodexOutput(failed, None, text)


def parse_arguments(arguments: Any) -> Any:
    """A ``function_call``'s ``arguments`` (JSON in a string) as a value; the string itself
    when it is not JSON (the call is still a call, its arguments just cannot be read)."""
    if not isinstance(arguments, str):
        return arguments
    try:
        return untrusted_json.loads(arguments)
    except ValueError:
        return arguments
