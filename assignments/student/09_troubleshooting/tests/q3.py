from otter.test_files import test_case

OK_FORMAT = False

name = "q3"
points = 2

@test_case(points=None, hidden=False)
def test_gradient_factor(gradient_factor):
    assert gradient_factor(4) is not None, 'returns None: replace ... with your code'
    assert gradient_factor(1) == 1, 'one replica: reduce_mean is right'

