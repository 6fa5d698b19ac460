from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 1

@test_case(points=None, hidden=False)
def test_array_option(array_option):
    assert array_option(4, 2) is not None, '返回了 None：把 ... 换成你的代码'
    assert array_option(4, 2) == '--array=0-3%2', '四个任务，每次两个（notebook 11 §4）'

