"""Regenerates torch-xla-api.txt, the torch_xla signatures the PyTorch/XLA export is tested against.

Run it in a checkout of pytorch/xla (the commit named in the file's header), from this directory:

  python3 torch_xla_lists.py XLA > torch-xla-api.txt

It reads each function's definition with Python's ast module (importing torch_xla would need torch and a
TPU runtime) and prints it as the export's tests read it: name(params), '*' where the keyword-only
parameters start, and each default as the source spells it after '='. Nothing of torch_xla runs.
"""

import ast
import subprocess
import sys

root = sys.argv[1]
commit = subprocess.run(['git', '-C', root, 'rev-parse', 'HEAD'], capture_output=True, text=True).stdout.strip()

# The name the export calls, the file that defines it, and the definition (Class.__init__ for a class).
CALLS = [
    ('xr.use_spmd', 'torch_xla/runtime.py', 'use_spmd'),
    ('xr.global_runtime_device_count', 'torch_xla/runtime.py', 'global_runtime_device_count'),
    ('xs.Mesh', 'torch_xla/distributed/spmd/xla_sharding.py', 'Mesh.__init__'),
    ('xs.HybridMesh', 'torch_xla/distributed/spmd/xla_sharding.py', 'HybridMesh.__init__'),
    ('xs.mark_sharding', 'torch_xla/distributed/spmd/xla_sharding.py', 'mark_sharding'),
    ('xs.mark_sharding_with_gradients', 'torch_xla/distributed/spmd/xla_sharding.py', 'mark_sharding_with_gradients'),
    ('xs.set_global_mesh', 'torch_xla/distributed/spmd/xla_sharding.py', 'set_global_mesh'),
    ('FSDPv2', 'torch_xla/experimental/spmd_fully_sharded_data_parallel.py', 'SpmdFullyShardedDataParallel.__init__'),
    ('checkpoint_module', 'torch_xla/distributed/fsdp/utils.py', 'checkpoint_module'),
    ('flash_attention', 'torch_xla/experimental/custom_kernel.py', 'flash_attention'),
]


def find(tree, qualname):
    """The function definition at qualname ('f' or 'Class.method') in a module's top level."""
    body = tree.body
    *outer, name = qualname.split('.')
    for cls in outer:
        body = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == cls).body
    return next(n for n in body if isinstance(n, ast.FunctionDef) and n.name == name)


def params(fn, method):
    """fn's parameters as name or name=default, '*' before the keyword-only ones; self dropped."""
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + a.defaults
    out = [p.arg + ('' if d is None else '=' + ast.unparse(d)) for p, d in zip(positional, defaults)]
    if method:
        out = out[1:]
    if a.kwonlyargs:
        out.append('*')
        out += [p.arg + ('' if d is None else '=' + ast.unparse(d)) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    return out


lines = []
for call, path, qualname in CALLS:
    fn = find(ast.parse(open(f'{root}/{path}').read()), qualname)
    lines.append((call, path, fn.lineno, params(fn, '.' in qualname)))

print(f'# pytorch/xla @ {commit}: the calls the PyTorch/XLA export writes, with their signatures as the')
print("# source defines them ('*' starts the keyword-only parameters; '=' a default, as the source spells it).")
print('# xr is torch_xla/runtime.py, xs torch_xla/distributed/spmd (whose __init__.py exports xla_sharding.py\'s')
print('# names), FSDPv2 SpmdFullyShardedDataParallel imported under that name, checkpoint_module')
print('# torch_xla/distributed/fsdp (its __init__.py exports utils.py\'s), flash_attention')
print('# torch_xla.experimental.custom_kernel. Made by torch_xla_lists.py; each name, then file and line:')
for call, path, line, _ in lines:
    print(f'#   {call}: {path} {line}')
for call, _, _, ps in lines:
    print(f'{call}({", ".join(ps)})')
