# /etc/profile inside benchtui's sandbox: login shells (codex runs `bash -lc`) keep the PATH the
# sandbox set, which has `pred` in /opt/benchtui/bin; the host's /etc/profile would reset it.
