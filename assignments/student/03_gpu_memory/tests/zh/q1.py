from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 2

@test_case(points=None, hidden=False)
def test_gpu_env(gpu_env):
    env = gpu_env([0, 2], True)
    assert env is not None, 'gpu_env 返回 None：把 ... 换成你的代码'
    expected = {'CUDA_VISIBLE_DEVICES': '0,2', 'TF_FORCE_GPU_ALLOW_GROWTH': 'true'}
    assert env == expected, f'应为 {expected}，你的结果是 {env}'

