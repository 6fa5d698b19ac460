from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 2

@test_case(points=None, hidden=False)
def test_gpipe_bubble(gpipe_bubble):
    assert gpipe_bubble(4, 4) is not None, 'returns None: replace ... with your code'
    assert gpipe_bubble(1, 8) == 0, 'one stage never waits'
    assert abs(gpipe_bubble(4, 1) - 0.75) < 1e-12, '1 micro-batch on 4 stages: 3 of 4 idle'

