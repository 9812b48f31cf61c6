#!/usr/bin/env bash
# check-subjects.sh [BASE]: every commit after BASE (default: the first commit of the convention,
# issue 36) has a subject "area: imperative summary" of at most 72 characters. The reasons and
# measurements belong in the body. Run by .ci/run; exits non-zero naming each offending commit.
set -euo pipefail
cd "$(dirname "$0")/.."
base="${1:-2f5dc2d}"
if ! git cat-file -e "${base}^{commit}" 2>/dev/null; then
	# A shallow clone lacks the base: fetch the history once, then insist.
	git fetch --quiet --unshallow 2>/dev/null || true
	git cat-file -e "${base}^{commit}" 2>/dev/null || {
		echo "check-subjects: commit $base is not in this clone; clone with full history" >&2
		exit 2
	}
fi
bad=0
while IFS=$'\t' read -r hash subject; do
	if ((${#subject} > 72)); then
		echo "check-subjects: $hash: subject is ${#subject} characters, at most 72: $subject" >&2
		bad=1
	fi
	if ! [[ $subject =~ ^[a-z0-9][a-z0-9/_.,-]*(\ [a-z0-9/_.,-]+)*:\ [^\ ] ]]; then
		echo "check-subjects: $hash: subject is not \"area: imperative summary\": $subject" >&2
		bad=1
	fi
done < <(git log --no-merges --format=$'%h\t%s' "${base}^..HEAD")
if ((bad)); then
	exit 1
fi
echo "check-subjects: $(git rev-list --no-merges --count "${base}^..HEAD") subjects since $base follow the convention"
