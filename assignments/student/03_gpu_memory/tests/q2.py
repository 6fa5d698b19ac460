from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 2

@test_case(points=None, hidden=False)
def test_virtual_gpus(virtual_gpus, tf):
    configs = virtual_gpus(2, 1024)
    assert configs is not None, 'virtual_gpus returns None: replace ... with your code'
    assert len(configs) == 2, 'one configuration per logical GPU'
    kinds = [type(c).__name__ for c in configs]
    assert all([isinstance(c, tf.config.LogicalDeviceConfiguration) for c in configs]), f'each one a tf.config.LogicalDeviceConfiguration, not {kinds}'

