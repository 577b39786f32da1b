#!/bin/bash
# Path churn under verified IO over two independently cut and shaped paths,
# through rnbd over this module; see tests/mp-churn.sh and tests/lib-mp.sh.
. "$(dirname "$0")/../lib.sh"
skip_all_unless_api 14
MP_CLIENT=rs exec bash "$(dirname "$0")/../mp-churn.sh"
