# Sourced by tests/scripts/pg.sh and my.sh: the account a throwaway database server runs as.
# Servers refuse to run as root, and CI runs as root: then the server runs as the system
# account the Debian package made (SYSTEM), or as FALLBACK created for the purpose when there
# is none; the choice is kept in $dir/owner. Run as another user, it runs as that user.
#   pick_owner SYSTEM FALLBACK WHAT   sets $owner ($dir must be set; die must be defined)
#   as CMD...                         runs CMD as $owner, from $dir

pick_owner() {
	owner=$(id -un)
	[ "$(id -u)" -eq 0 ] || return 0
	if [ -f "$dir/owner" ]; then
		owner=$(cat "$dir/owner")
	elif id "$1" >/dev/null 2>&1; then
		owner=$1
	else
		id "$2" >/dev/null 2>&1 ||
			useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$2" ||
			die "cannot create the system user $2 to run $3 as (it refuses root)"
		owner=$2
	fi
}

as() {
	cd "$dir" 2>/dev/null || cd /
	if [ "$(id -u)" -ne 0 ]; then
		"$@"
	elif command -v runuser >/dev/null; then
		runuser -u "$owner" -- "$@"
	else
		setpriv --reuid="$owner" --regid="$owner" --init-groups -- "$@"
	fi
}
