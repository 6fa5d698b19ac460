from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 2

@test_case(points=None, hidden=False)
def test_virtual_gpus(virtual_gpus, tf):
    configs = virtual_gpus(2, 1024)
    assert configs is not None, 'virtual_gpus 返回 None：把 ... 换成你的代码'
    assert len(configs) == 2, '每个逻辑 GPU 一个配置'
    kinds = [type(c).__name__ for c in configs]
    assert all([isinstance(c, tf.config.LogicalDeviceConfiguration) for c in configs]), f'每一项都应是 tf.config.LogicalDeviceConfiguration，而不是 {kinds}'

