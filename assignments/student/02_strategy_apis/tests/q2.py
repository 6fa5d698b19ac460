from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 2

@test_case(points=None, hidden=False)
def test_copies(copies):
    assert copies('MirroredStrategy', 4) is not None, 'returns None: replace ... with your code'
    assert copies('MirroredStrategy', 4) == 4, 'MirroredStrategy: one copy per device'

