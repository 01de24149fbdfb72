"""Shell completion for ``t9k``, generated from its own argparse parser.

Commands and each command's flags complete from the parser; a job's name
completes from ``t9k list -o name`` in the namespace given on the line.
"""

from __future__ import annotations

import argparse

_NAMED = ("describe", "logs", "wait", "pause", "resume", "delete", "tensorboard")


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _flags(parser: argparse.ArgumentParser) -> list[str]:
    return sorted(
        o for a in parser._actions for o in a.option_strings if a.help != argparse.SUPPRESS
    )


def _choices(parser: argparse.ArgumentParser) -> list[str]:
    for a in parser._actions:
        if not a.option_strings and a.choices and not isinstance(a, argparse._SubParsersAction):
            return [str(c) for c in a.choices]
    return []


def completion_script(shell: str, parser: argparse.ArgumentParser) -> str:
    commands = _commands(parser)
    cases = []
    for name, sub in commands.items():
        words = " ".join([*_flags(sub), *_choices(sub)])
        jobs = " $(__t9k_jobs)" if name in _NAMED else ""
        cases.append(f'        {name}) words="{words}{jobs}" ;;')
    body = "\n".join(cases)
    script = f"""# t9k completion ({shell}): source <(t9k completion {shell})
__t9k_jobs() {{
    local ns=() i
    for ((i = 1; i < ${{#COMP_WORDS[@]}}; i++)); do
        case "${{COMP_WORDS[i]}}" in
            -n|--namespace) ns=(-n "${{COMP_WORDS[i+1]}}") ;;
        esac
    done
    t9k list "${{ns[@]}}" -o name 2>/dev/null | sed 's|.*/||'
}}
__t9k_complete() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" command="" words i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${{COMP_WORDS[i]}}" in
            -*) ;;
            *) command="${{COMP_WORDS[i]}}"; break ;;
        esac
    done
    case "$command" in
        "") words="{" ".join(commands)} --kubeconfig --context --namespace --help" ;;
{body}
        *) words="" ;;
    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}}
"""
    if shell == "zsh":
        script += "autoload -U +X bashcompinit && bashcompinit\n"
    script += "complete -o default -F __t9k_complete t9k\n"
    return script
