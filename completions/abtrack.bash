# bash completion for abtrack                                  -*- shell-script -*-
# Installed as share/bash-completion/completions/abtrack (cmake --install). Completes commands,
# their options, --format values, and --cell values from the plan's cells (`abtrack status`).

_abtrack_cells() {
  # The cells of the plan in use (honouring -p/--plan on the line), as k=v,k=v.
  local plan=() i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      -p | --plan) plan=(--plan "${COMP_WORDS[i + 1]}") ;;
      --plan=*) plan=("${COMP_WORDS[i]}") ;;
    esac
  done
  abtrack "${plan[@]}" -q status 2>/dev/null |
    sed -n 's/^  \([^ ].*\)$/\1/p' | awk -F'  ' '{ gsub(/ /, ",", $1); print $1 }'
}

_abtrack() {
  local cur prev cmd i
  COMPREPLY=()
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD - 1]}
  local commands="init step run status log render verify compare check export collect cancel clean drop bisect help"
  local global="-p --plan -q --quiet -v --verbose --version --help"

  case $prev in
    -p | --plan | --record)
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -f -- "$cur"))
      return 0
      ;;
    --format)
      if [[ " ${COMP_WORDS[*]} " == *" check "* ]]; then
        COMPREPLY=($(compgen -W "text md" -- "$cur"))
      else
        COMPREPLY=($(compgen -W "csv md json" -- "$cur"))
      fi
      return 0
      ;;
    --cell)
      local IFS=$'\n'
      COMPREPLY=($(compgen -W "$(_abtrack_cells)" -- "$cur"))
      return 0
      ;;
    --better)
      COMPREPLY=($(compgen -W "lower higher" -- "$cur"))
      return 0
      ;;
    --rounds)
      COMPREPLY=($(compgen -W "auto" -- "$cur"))
      return 0
      ;;
    --good | --bad)
      COMPREPLY=($(compgen -W "$(git for-each-ref --format='%(refname:short)' refs/heads refs/tags 2>/dev/null)" -- "$cur"))
      return 0
      ;;
  esac

  cmd=
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      -p | --plan) ((i++)) ;;
      -*) ;;
      *)
        cmd=${COMP_WORDS[i]}
        break
        ;;
    esac
  done

  if [ -z "$cmd" ]; then
    COMPREPLY=($(compgen -W "$commands $global" -- "$cur"))
    return 0
  fi
  local opts=
  case $cmd in
    step) opts="--cell --record --metric --no-commit" ;;
    run) opts="--rounds --max-rounds --budget --seed --all --retry --keep-going --dry-run --jobs --detach --rev --rebuild" ;;
    clean) opts="--keep" ;;
    drop) opts="--reason" ;;
    status | log) opts="--json" ;;
    compare) opts="--metric --json --samples --better --alpha --min-effect" ;;
    export) opts="--format --cells" ;;
    check) opts="--format --history --min-effect" ;;
    collect) opts="--wait" ;;
    bisect) opts="--good --bad --cell --metric --max-rounds --budget --min-effect --seed" ;;
    help)
      COMPREPLY=($(compgen -W "$commands" -- "$cur"))
      return 0
      ;;
  esac
  [ "$cmd" = log ] && opts="$opts --all"
  COMPREPLY=($(compgen -W "$opts $global" -- "$cur"))
  return 0
}
complete -F _abtrack abtrack
