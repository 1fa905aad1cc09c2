package python

import "os"

// SystemInterpreter is the distribution's python (Debian: /usr/bin/python3),
// which sees the libraries installed as distribution packages
// (python3-psycopg2, python3-psycopg: /usr/lib/python3/dist-packages).
const SystemInterpreter = "/usr/bin/python3"

// PreferredInterpreter is the interpreter used when none is configured
// (NOETL_PYTHON unset): SystemInterpreter when it exists and is
// executable, so that NoETL python tasks can import psycopg and psycopg2
// from the Debian packages scripts/up installs, whatever python3 comes
// first on PATH (a pyenv or venv python does not see dist-packages);
// otherwise DefaultInterpreter, looked up on PATH.
func PreferredInterpreter() string {
	if st, err := os.Stat(SystemInterpreter); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return SystemInterpreter
	}
	return DefaultInterpreter
}
