from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 2

@test_case(points=None, hidden=False)
def test_copies(copies):
    assert copies('MirroredStrategy', 4) is not None, '返回了 None：把 ... 换成你的代码'
    assert copies('MirroredStrategy', 4) == 4, 'MirroredStrategy：每个设备一份副本'

