from otter.test_files import test_case

OK_FORMAT = False

name = "q1"
points = 1

@test_case(points=None, hidden=False)
def test_array_option(array_option):
    assert array_option(4, 2) is not None, 'returns None: replace ... with your code'
    assert array_option(4, 2) == '--array=0-3%2', 'four tasks, two at a time (notebook 11 §4)'

