"""Regenerates xpk-workload-create-flags.txt (here) and ../xpk-tpu-types.txt.

It builds xpk's own argparse parser for `xpk workload create` and asks xpk's
system-characteristics table for the TPU types `--tpu-type` accepts and, for
each, the VMs xpk makes its slice of: gce_machine_type, chips_per_vm and
vms_per_slice, after the name on its line. Run it in a checkout of
AI-Hypercomputer/xpk (the commit named in the files' headers):

  PYTHONPATH=src python3 xpk_lists.py flags ruamel argcomplete
  PYTHONPATH=src python3 xpk_lists.py tpu-types ruamel argcomplete

Arguments after the first name third-party packages xpk imports but the
parser does not use; they are replaced by stubs so that no install is needed.
"""

import argparse
import importlib.abc
import importlib.machinery
import sys
import types
from unittest import mock

STUBBED = set(sys.argv[2:])


class Stub(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] not in STUBBED:
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        m = mock.MagicMock()
        m.__path__, m.__name__, m.__spec__ = [], spec.name, spec
        return m

    def exec_module(self, module):
        pass


sys.meta_path.append(Stub())
# The parser only refers to the command functions; their module needs a
# cluster toolchain, so it is replaced by one that names them.
cmd = types.ModuleType('xpk.commands.workload')
for n in ('workload_create', 'workload_create_pathways', 'workload_delete', 'workload_list'):
    setattr(cmd, n, lambda args: None)
sys.modules['xpk.commands.workload'] = cmd

from xpk.parser.workload import set_workload_create_parser  # noqa: E402
from xpk.core.system_characteristics import (  # noqa: E402
    AcceleratorType, UserFacingNameToSystemCharacteristics,
    get_system_characteristics_keys_by_accelerator_type)

if sys.argv[1] == 'flags':
    p = argparse.ArgumentParser()
    set_workload_create_parser(p)
    for f in sorted({o for a in p._actions for o in a.option_strings}):
        print(f)
else:
    for k in get_system_characteristics_keys_by_accelerator_type([AcceleratorType.TPU]):
        sc = UserFacingNameToSystemCharacteristics[k]
        print(k, sc.gce_machine_type, sc.chips_per_vm, sc.vms_per_slice)
