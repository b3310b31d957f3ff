"""Shell completion for `tidemind` (bash, zsh, fish), written from the CLI's own parser, so a
command or option added there completes without anyone editing a script.

    eval "$(tidemind completion bash)"                 # ~/.bashrc
    eval "$(tidemind completion zsh)"                  # ~/.zshrc
    tidemind completion fish | source                  # ~/.config/fish/config.fish

Commands complete after `tidemind`, each command's options after it, and file names wherever
an option or argument takes a value.
"""
from __future__ import annotations

import argparse
import shlex

SHELLS = ("bash", "zsh", "fish")


def _commands(parser: argparse.ArgumentParser) -> dict[str, tuple[str, list[str], list[str]]]:
    """{command: (its help, its long options, the words its arguments take: `tokens add`,
    `completion bash`)}."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            out = {}
            for name, sub in action.choices.items():
                options = sorted({o for a in sub._actions for o in a.option_strings if o.startswith("--")})
                words = sorted({str(c) for a in sub._actions if not a.option_strings and a.choices
                                for c in a.choices})
                out[name] = (helps.get(name, ""), options, words)
            return out
    return {}


def _global(parser: argparse.ArgumentParser) -> tuple[list[str], list[str]]:
    """(every long option before the command, those that take a value)."""
    options = [a for a in parser._actions if a.option_strings and not isinstance(a, argparse._SubParsersAction)]
    longs = sorted(o for a in options for o in a.option_strings if o.startswith("--"))
    valued = sorted(o for a in options if a.nargs != 0 for o in a.option_strings if o.startswith("--"))
    return longs, valued


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    if shell not in SHELLS:
        raise ValueError(f"no completion for {shell!r}: one of {', '.join(SHELLS)}")
    commands = _commands(parser)
    longs, valued = _global(parser)
    if shell == "fish":
        return _fish(commands, longs)
    cases = "\n".join(f"    {name}) opts={shlex.quote(' '.join(options))} words={shlex.quote(' '.join(words))} ;;"
                      for name, (_, options, words) in commands.items())
    bash = f"""# tidemind completion ({shell}); written by `tidemind completion {shell}`
_tidemind() {{
  local cur="${{COMP_WORDS[COMP_CWORD]}}" cmd="" opts="" words="" i skip=0
  for ((i = 1; i < COMP_CWORD; i++)); do
    if ((skip)); then skip=0; continue; fi
    case "${{COMP_WORDS[i]}}" in
      {'|'.join(valued) or '--none'}) skip=1 ;;
      -*) ;;
      *) cmd="${{COMP_WORDS[i]}}"; break ;;
    esac
  done
  if [[ -z "$cmd" ]]; then
    COMPREPLY=($(compgen -W {shlex.quote(' '.join([*commands, *longs]))} -- "$cur"))
    return
  fi
  case "$cmd" in
{cases}
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$words" -- "$cur") $(compgen -f -- "$cur"))
  fi
}}
"""
    if shell == "zsh":
        return bash + "autoload -U +X bashcompinit && bashcompinit\ncomplete -o default -F _tidemind tidemind\n"
    return bash + "complete -o default -F _tidemind tidemind\n"


def _fish(commands: dict[str, tuple[str, list[str], list[str]]], longs: list[str]) -> str:
    lines = ["# tidemind completion (fish); written by `tidemind completion fish`",
             "complete -c tidemind -f"]
    for option in longs:
        lines.append(f"complete -c tidemind -n __fish_use_subcommand -l {option[2:]}")
    for name, (help_, options, words) in commands.items():
        lines.append(f"complete -c tidemind -n __fish_use_subcommand -a {shlex.quote(name)}"
                     f" -d {shlex.quote(help_[:60])}")
        for option in options:
            lines.append(f"complete -c tidemind -n '__fish_seen_subcommand_from {name}' -l {option[2:]}")
        if words:
            lines.append(f"complete -c tidemind -n '__fish_seen_subcommand_from {name}'"
                         f" -a {shlex.quote(' '.join(words))}")
    return "\n".join(lines) + "\n"
