from . import urls_pages, urls_transfer

app_name = "records"
urlpatterns = urls_pages.urlpatterns + urls_transfer.urlpatterns
